"""The archive's words for what a program is and what a call was for, as StrEnums: a member
is its string, so the stored values and JSON are the strings they always were.

ProgramKind: programs.kind; EditFormat: the edit formats a model may be asked for (the run
setting `edit_format`); CallPurpose: llm_calls.purpose.
"""

from __future__ import annotations

from enum import StrEnum


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
