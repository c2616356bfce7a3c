"""An agent's sessions in `evolve archive export`: each program an agent made gets its
session's counts (`agent.turns`, `agent.tool_calls`, `agent.evals`, `agent.tokens`), and each
turn's LLM-call row its place in the session (`agent_turn`) and its tools with what the
model was told of them (`agent_tools`: JSON of [{name, arg, result}], the model's and the
candidate's text). Empty for every other program and call."""

from __future__ import annotations

import json
from dataclasses import asdict

from evolve.agent import transcript
from evolve.archive import ArchiveReader, ProgramRow

PROGRAM_AGENT_COLS = ("agent.turns", "agent.tool_calls", "agent.evals", "agent.tokens")
CALL_AGENT_COLS = ("agent_turn", "agent_tools")


def agent_columns(
    reader: ArchiveReader, programs: list[ProgramRow]
) -> tuple[dict[str, dict], dict[int, dict]]:
    """(program_id -> its agent columns, call_id -> its agent columns) for the programs."""
    by_program: dict[str, dict] = {}
    by_call: dict[int, dict] = {}
    for p in programs:
        t = transcript.of_program(reader, p)
        if t is None:
            continue
        by_program[p.program_id] = {
            "agent.turns": len(t.turns),
            "agent.tool_calls": t.tool_calls,
            "agent.evals": len(t.evaluations),
            "agent.tokens": t.tokens,
        }
        for turn in t.turns:
            if turn.call_id is not None:
                tools = [asdict(u) for u in turn.tools]
                by_call[turn.call_id] = {"agent_turn": turn.turn, "agent_tools": json.dumps(tools)}
    return by_program, by_call
