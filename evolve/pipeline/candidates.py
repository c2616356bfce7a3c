"""From a model's reply to the candidate row it makes: the edit applied to its parent
(FunSearch's `_vK` names undone first), the size cap checked. Whether it repeats a
program of the run is the controller's question: it knows what is in flight.

Everything here is bounded by the text alone (evolve/edits/bounds.py): a reply over the
problem's reply limit is not parsed, a program over the size cap stops the edit as soon as
it is, and whatever goes wrong on the way is this candidate's recorded failure, decided
the same way when a resumed run makes the row again from the stored reply."""

from __future__ import annotations

from evaluators import tree
from evolve.archive import LlmCall, ProgramRow
from evolve.archive.vocab import ProgramKind, ProgramStatus
from evolve.edits import EditOutcome, apply_reply, normalized_hash, unified_diff
from evolve.edits.bounds import reply_limit, text_bytes
from evolve.edits.files import Layout, apply_tree_reply, layout, tree_diff
from evolve.problem.load import Problem
from evolve.problem.size_cap import oversized, refused, size_reason
from evolve.search.versions import block_functions, unversioned

ASKED = {"crossover": "block", "funsearch": "block", "repair": "block"}  # what to parse
KIND = {"crossover": ProgramKind.CROSSOVER, "repair": ProgramKind.REPAIR}  # others: mutation


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
        status=ProgramStatus.PENDING,
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
    fmt = call.edit_format
    edit = edit_of(call.reply, fmt, parent.code, problem)
    if edit.oversized is not None:
        refusal = refused(size_reason(problem, edit.oversized))
    else:
        refusal = oversized(problem, edit.code) if edit.ok and edit.code else None
    keep = edit.ok and edit.code is not None and refusal is None
    row = new_row(
        run_id,
        problem,
        call.iteration,
        call.island,
        edit.code if keep else None,
        parent_id=parent.program_id,
        second_id=call.second_parent_id,
        kind=KIND.get(fmt, ProgramKind.MUTATION),
        edit_kind=edit.kind,
        model=call.model,
        diff=edit.diff if keep else None,
    )
    row.llm_call_id = call.call_id
    if refusal is not None:  # unevaluated: its status and error only
        row.status, row.artifacts = ProgramStatus(refusal.status), refusal.artifacts
    elif not edit.ok or edit.code is None:
        row.status = ProgramStatus.INVALID_EDIT
        row.artifacts = {"error": f"the reply could not be applied: {edit.error}"}
    return row


def agent_row(
    call: LlmCall, code: str | None, reason: str, parent: ProgramRow, run_id: str, problem: Problem
) -> ProgramRow:
    """The program an agent's session hands in (evolve/agent/): `call` its last turn, `code`
    its working copy (None: nothing to hand in, `reason` says why); pending, unless over the
    size cap. Its kind is a single call's for the same prompt; edit_kind says `agent`."""
    if parent.code is None:
        raise ValueError(f"program {parent.program_id} has no code")
    refusal = oversized(problem, code) if code is not None else None
    keep = code is not None and refusal is None
    diff = None
    if keep and code is not None:
        try:
            diff = (
                tree_diff(tree.decode(parent.code, problem.entry), tree.decode(code, problem.entry))
                if problem.files
                else unified_diff(parent.code, code)
            )
        except tree.TreeError:
            diff = unified_diff(parent.code, code)
    row = new_row(
        run_id,
        problem,
        call.iteration,
        call.island,
        code if keep else None,
        parent_id=parent.program_id,
        second_id=call.second_parent_id,
        kind=KIND.get(call.edit_format, ProgramKind.MUTATION),
        edit_kind="agent",
        model=call.model,
        diff=diff,
    )
    row.llm_call_id = call.call_id
    if refusal is not None:
        row.status, row.artifacts = ProgramStatus(refusal.status), refusal.artifacts
    elif code is None:
        row.status = ProgramStatus.INVALID_EDIT
        row.artifacts = {"error": reason}
    return row


def edit_of(reply: str, fmt: str, parent_code: str, problem: Problem) -> EditOutcome:
    """The reply applied to the parent's code, bounded: a reply over the problem's limit
    is not parsed at all. Never raises (apply_reply does not either)."""
    limit = reply_limit(problem.max_code_bytes)
    if (size := text_bytes(reply)) > limit:
        return EditOutcome(
            False, None, "none", f"the reply is {size:,} bytes; at most {limit:,} are parsed"
        )
    if fmt == "funsearch":  # the model wrote NAME_vK: back to NAME
        reply = unversioned(reply, block_functions(parent_code))
    asked = ASKED.get(fmt, fmt)
    if problem.files:  # a program of several files: each edit under its file's path
        return apply_tree_reply(
            parent_code, reply, asked, tree_layout(problem), problem.max_code_bytes
        )
    return apply_reply(parent_code, reply, asked, problem.max_code_bytes)


def tree_layout(problem: Problem) -> Layout:
    """What an edit of the problem's tree may touch (its files, the evolving ones, the
    seed's fixed files)."""
    return layout(problem.files, problem.fixed_files, problem.entry, problem.seed_code)
