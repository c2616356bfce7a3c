"""Where the agent proposer's sessions go: what each turn did, and how each session ended.

    python bench/agent_sessions.py RUNS_DIR [RUNS_DIR ...] [--json OUT]

For every run of `--proposer agent` in each archive: sessions and turns; the turns' actions
(list, read, evaluate, submit, and malformed ones: no ACTION line, an unknown action); the
edits the model wrote and how many applied; the train evaluations it ran and their statuses;
how sessions ended (a submit, --agent-turns or --agent-evals used up, the model's window,
--max-calls: see _cut); and what the handed-in programs became. It reads the stored
turns exactly as the program page shows them (evolve/agent/transcript.py), so it says where a
small model breaks: the tool format, the edits, the context or the turns.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from evolve.agent import transcript  # noqa: E402
from evolve.agent.protocol import ACTIONS, parse_turn  # noqa: E402
from evolve.agent.window import session_window  # noqa: E402
from evolve.archive import ArchiveReader  # noqa: E402
from evolve.llm.context_budget import TokenBudget  # noqa: E402

_LIMIT = 1 << 40  # stored replies are already bounded
EDIT_RESULTS = {
    "edit applied": "applied",
    "edit not applied": "not applied",
    "the edit changed nothing": "changed nothing",
}


def _edit_result(text: str | None) -> str | None:
    for head, what in EDIT_RESULTS.items():
        if text and text.startswith(head):
            return what
    return None


def _asked(t: transcript.Transcript, action: str) -> int:
    return sum(u.name == action for turn in t.turns for u in turn.tools)


def _cut(last: transcript.AgentTurn, window: int | None, spent: bool) -> str:
    """Why a session ended that neither submitted nor used up its turns or evaluations: a
    session checks its window and --agent-tokens before asking, and is refused a turn once
    --max-calls is spent, so nothing of that end is stored. Its last prompt and reply (a
    lower bound of the next prompt) past 90% of the window say window; else a spent run
    says --max-calls."""
    if window is not None and last.prompt_tokens + last.completion_tokens > 0.9 * window:
        return "window"
    return "--max-calls" if spent else "window or --agent-tokens"


def _spent(reader: ArchiveReader, run_id: str, config: dict) -> bool:
    """Whether the run answered all the calls --max-calls allowed."""
    limit = config.get("max_calls")
    turns = reader.run_agent_turns(run_id)
    return isinstance(limit, int) and sum(len(c) for c in turns.values()) >= limit


def _window(config: dict) -> int | None:
    """The prompt tokens a turn may use: the session's window (evolve/agent/window.py) less
    its reply and a margin."""
    cw, reply = config.get("context_window"), config.get("max_tokens")
    if not isinstance(cw, int) or not isinstance(reply, int):
        return None
    models = [m[0] for m in config.get("models") or () if isinstance(m, list) and m]
    window = session_window(cw, str(config.get("proposer")), models) or cw
    return TokenBudget.for_model(window, reply).prompt_tokens


def run_row(reader: ArchiveReader, run_id: str) -> dict | None:
    """One run's agent sessions summed; None for a run without any."""
    run = reader.run(run_id)
    config = run.config if run is not None else {}
    turns_limit = config.get("agent_turns")
    evals_limit = config.get("agent_evals")
    spent, window = _spent(reader, run_id, config), _window(config)
    actions: Counter[str] = Counter()
    edits: Counter[str] = Counter()
    evals: Counter[str] = Counter()
    ends: Counter[str] = Counter()
    programs: Counter[str] = Counter()
    sessions = turns = 0
    for p in reader.programs(run_id):
        t = transcript.of_program(reader, p)
        if t is None:
            continue
        sessions += 1
        turns += len(t.turns)
        programs[str(p.status)] += 1
        for turn in t.turns:
            names = [u.name if u.name in (*ACTIONS, "edit") else "malformed" for u in turn.tools]
            actions.update(n for n in names if n != "edit")
            wrote = "edit" in names or (
                t.protocol == "text" and parse_turn(turn.text, "text", _LIMIT).edit is not None
            )
            if wrote:
                told = next((w for u in turn.tools if (w := _edit_result(u.result))), None)
                edits[told or "never told"] += 1
        evals.update(e.status or "never told" for e in t.evaluations)
        last = t.turns[-1].tools if t.turns else ()
        if any(u.name == "submit" for u in last):
            ends["submit"] += 1
        elif turns_limit is not None and len(t.turns) >= turns_limit:
            ends["turns used up"] += 1
        elif isinstance(evals_limit, int) and _asked(t, "evaluate") > evals_limit:
            ends["evaluations used up"] += 1
        else:
            ends[_cut(t.turns[-1], window, spent)] += 1
    if not sessions:
        return None
    return {
        "run_id": run_id,
        "sessions": sessions,
        "turns": turns,
        "actions": dict(actions),
        "edits": dict(edits),
        "evaluations": dict(evals),
        "ends": dict(ends),
        "programs": dict(programs),
    }


def _counts(c: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items(), key=lambda kv: -kv[1])) or "-"


def table(rows: list[dict]) -> str:
    lines = [
        "| run | sessions | turns | actions | edits | train evaluations | ended by | programs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['where']} {r['run_id']} | {r['sessions']} | {r['turns']} "
            f"| {_counts(r['actions'])} | {_counts(r['edits'])} | {_counts(r['evaluations'])} "
            f"| {_counts(r['ends'])} | {_counts(r['programs'])} |"
        )
    return "\n".join(lines)


def total(rows: list[dict]) -> dict:
    out: dict = {"where": "all", "run_id": f"({len(rows)} runs)", "sessions": 0, "turns": 0}
    for key in ("actions", "edits", "evaluations", "ends", "programs"):
        out[key] = dict(sum((Counter(r[key]) for r in rows), Counter()))
    for r in rows:
        out["sessions"] += r["sessions"]
        out["turns"] += r["turns"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs_dirs", nargs="+", type=Path, help="folders holding an archive.db")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    a = ap.parse_args(argv)
    rows = []
    for folder in a.runs_dirs:
        if not (folder / "archive.db").is_file():
            raise SystemExit(f"{folder}: no archive.db there")
        reader = ArchiveReader(folder)
        for run in reader.runs():
            row = run_row(reader, run.run_id)
            if row is not None:
                rows.append({"where": str(folder), **row})
    if not rows:
        print("no agent sessions in these archives (runs of --proposer agent)")
        return 0
    print(table([*rows, total(rows)] if len(rows) > 1 else rows))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2) + "\n")
        print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
