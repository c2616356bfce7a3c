"""From a model's reply to the candidate row it makes: the edit applied to its parent
(FunSearch's `_vK` names undone first), the size cap checked. Whether it repeats a
program of the run is the controller's question: it knows what is in flight."""

from __future__ import annotations

from evaluators.sandbox import Status
from evolve.archive import LlmCall, ProgramRow
from evolve.edits import apply_reply, normalized_hash
from evolve.problem import Problem
from evolve.search.versions import block_functions, unversioned
from evolve.size_cap import oversized

ASKED = {"crossover": "block", "funsearch": "block", "repair": "block"}  # what to parse
KIND = {"crossover": "crossover", "repair": "repair"}  # programs.kind; others: mutation


def program_id(run_id: str, iteration: int) -> str:
    return f"{run_id}:{iteration}"


def new_row(
    run_id: str,
    problem: Problem,
    iteration: int,
    island: int,
    code: str | None,
    *,
    parent_id: str | None = None,
    second_id: str | None = None,
    kind: str = "mutation",
    edit_kind: str | None = None,
    model: str | None = None,
    diff: str | None = None,
) -> ProgramRow:
    return ProgramRow(
        program_id=program_id(run_id, iteration),
        run_id=run_id,
        problem=problem.name,
        iteration=iteration,
        island=island,
        status=Status.PENDING,
        code=code,
        parent_id=parent_id,
        second_parent_id=second_id,
        kind=kind,
        edit_kind=edit_kind,
        model=model,
        diff=diff,
        code_hash=normalized_hash(code, problem.language) if code is not None else None,
    )


def reply_to_row(call: LlmCall, parent: ProgramRow, run_id: str, problem: Problem) -> ProgramRow:
    """The program an answered call's reply makes: pending, unless the reply could not be
    applied (invalid_edit) or the program is over the size cap (invalid, no code kept: the
    reply has it)."""
    if parent.code is None:
        raise ValueError(f"program {parent.program_id} has no code")
    if call.reply is None:
        raise ValueError(f"call {call.call_id} has no reply")
    fmt, reply = call.edit_format, call.reply
    if fmt == "funsearch":  # the model wrote NAME_vK: back to NAME
        reply = unversioned(reply, block_functions(parent.code))
    edit = apply_reply(parent.code, reply, ASKED.get(fmt, fmt))
    refused = oversized(problem, edit.code) if edit.ok and edit.code else None
    keep = edit.ok and edit.code is not None and refused is None
    row = new_row(
        run_id,
        problem,
        call.iteration,
        call.island,
        edit.code if keep else None,
        parent_id=parent.program_id,
        second_id=call.second_parent_id,
        kind=KIND.get(fmt, "mutation"),
        edit_kind=edit.kind,
        model=call.model,
        diff=edit.diff if keep else None,
    )
    row.llm_call_id = call.call_id
    if not edit.ok or edit.code is None:
        row.status = Status.INVALID_EDIT
        row.artifacts = {"error": f"the reply could not be applied: {edit.error}"}
    elif refused is not None:  # unevaluated: its status and error only
        row.status, row.artifacts = refused.status, refused.artifacts
    return row
