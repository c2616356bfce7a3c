"""The archive's words for what a program is and what a call was for, as StrEnums: a member
is its string, so the stored values and JSON are the strings they always were.

ProgramStatus: programs.status; ProgramKind: programs.kind; EditFormat: the edit formats a
model may be asked for (the run setting `edit_format`); CallPurpose: llm_calls.purpose.
"""

from __future__ import annotations

from enum import StrEnum


class ProgramStatus(StrEnum):
    """programs.status: what became of a program. The first six are the outcomes a sandbox
    reports (evaluators/sandbox.py's Status, the same strings: ProgramStatus(outcome) is the
    member); the rest are the loop's, of a program no sandbox scored (yet) or a cascade it
    stopped."""

    # What a sandbox can report (evaluators.sandbox.Status).
    OK = "ok"
    INVALID = "invalid"  # ran, but the evaluator rejected its outputs (shapes, feasibility)
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    SANDBOX_ERROR = "sandbox_error"  # our fault, not the candidate's (harness crashed, no result)
    # What the loop records of a program no sandbox scored (yet), or only in part.
    PENDING = "pending"  # stored, its evaluation not finished (a resume finishes it)
    INVALID_EDIT = "invalid_edit"  # the reply could not be applied to its parent
    DUPLICATE = "duplicate"  # the same program (normalised) was already evaluated in the run
    REJECTED = "rejected"  # under a cascade stage's threshold: later stages were not run


class ProgramKind(StrEnum):
    """programs.kind: how a program came to be."""

    SEED = "seed"  # the problem's initial program (iteration 0)
    MUTATION = "mutation"  # a model's edit of one parent (an agent's too)
    CROSSOVER = "crossover"  # a model's child of two parents
    REPAIR = "repair"  # a model's fix of a failed parent
    TUNE = "tune"  # a tuned child: its parent with a number changed, no call (search/tune.py)


class EditFormat(StrEnum):
    """How a model is asked to write its edit (the setting `edit_format`)."""

    DIFF = "diff"
    BLOCK = "block"
    FULL = "full"


class CallPurpose(StrEnum):
    """llm_calls.purpose: what an LLM call was for."""

    MUTATION = "mutation"
    CROSSOVER = "crossover"
    REPAIR = "repair"
    RESAMPLE = "resample"
    META = "meta"
    AGENT = "agent"
