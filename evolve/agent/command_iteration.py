"""The iteration of `--proposer command:CMD`: a coding agent's command run confined in a
workspace of its parent's files; what it leaves becomes the candidate.

Resume: the command's outcome (the candidate or why there is none, its usage) is one
llm_calls row (purpose `agent`, model `command`), stored before the candidate is checked
or evaluated; a resumed iteration with that row never runs the command again. A command
killed before its row was stored left a marker file: it is run again, and said so. One
command run is one call for --max-calls, its reported cost counts for --budget-usd."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from evolve.agent import command_cost, confine
from evolve.agent.command_limits import CommandResources
from evolve.agent.command_run import CommandRun, run_command
from evolve.agent.command_spec import COMMAND_MODEL, command_argv, task_argv
from evolve.agent.command_task import task_text
from evolve.agent.command_view import MAX_EVAL_CALLS_KEPT, OUTPUT_TAIL, eval_call
from evolve.agent.command_workspace import Harvest, harvest, lay_out, parent_files
from evolve.agent.host import Host
from evolve.agent.iteration import evaluate_on_train, parent_code
from evolve.agent.tools import cut, outcome_text
from evolve.archive import LlmCall, ProgramRow, ProgramStatus
from evolve.archive.vocab import CallPurpose
from evolve.pipeline.candidates import agent_row
from evolve.pipeline.errors import CallsSpent, RunAborted
from evolve.pipeline.proposal import NoParent


async def command_iteration(ctl: Host, it: int) -> None:
    """Fill slot `it` with what the command leaves in its workspace."""
    stored = ctl.archive.agent_turns(ctl.run_id, it)
    if stored:
        call = stored[-1]
        parent = ctl._program(call.parent_id or "")
    else:
        async with ctl.asker.slot():  # --llm-parallel commands at once
            call, parent = await _run(ctl, it)
    try:
        outcome = json.loads(call.reply or "{}")
        code, reason = outcome.get("code"), str(outcome.get("reason", ""))
    except (ValueError, AttributeError):
        code, reason = None, "the stored outcome of the command could not be read"
    row = agent_row(call, code, reason, parent, ctl.run_id, ctl.problem)
    if row.status == ProgramStatus.INVALID_EDIT:
        ctl.observer.note(f"iteration {it} recorded invalid, unevaluated: {reason[:200]}")
    ctl._mark_duplicate(row)
    if row.status != ProgramStatus.PENDING:
        return ctl._finish_now(row)
    ctl.archive.insert_program(row)
    await ctl._evaluate_candidate(row)


def _marker(ctl: Host, it: int) -> Path:
    return ctl.archive.runs_dir / "agent-commands" / f"{ctl.run_id}-{it}.started"


async def _run(ctl: Host, it: int) -> tuple[LlmCall, ProgramRow]:
    """Run the command once and store its outcome; (the stored row, the parent)."""
    argv = command_argv(ctl.cfg.proposer)
    assert argv is not None
    try:
        bwrap = confine.check()
    except confine.Unconfinable as e:
        raise RunAborted(str(e)) from None
    if ctl._stop_reason() is not None:  # spent while this one waited for its slot
        raise CallsSpent()
    island = it % ctl.cfg.num_islands
    try:
        parent = ctl.proposer.propose(island, 0, ctl.notes).parent
    except NoParent as e:
        raise RunAborted(str(e)) from None
    files = parent_files(ctl.problem, parent_code(parent))
    feedback = outcome_text(parent.status, parent.score, parent.metrics, parent.artifacts)
    task = task_text(ctl.problem, list(files), ctl.notes, feedback, ctl.cfg.agent_evals)
    marker = _marker(ctl, it)
    if marker.exists():
        ctl.observer.note(
            f"iteration {it}: its agent command had not finished before the run stopped; "
            "it runs again"
        )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    evals = 0
    held_out_safe = ctl._cascade_is_train()
    calls: list[dict] = []  # each evolve-eval as the page shows it (command_view.py)

    async def answer() -> str:
        said = await _answer()
        if len(calls) < MAX_EVAL_CALLS_KEPT:
            calls.append(eval_call(said, evaluated=said.startswith("evaluation on")))
        return said

    async def _answer() -> str:
        nonlocal evals
        if not held_out_safe:
            return "evolve-eval is off for this problem (its cascade reads held-out data)\n"
        if evals >= ctl.cfg.agent_evals:
            return f"no evaluations left: {evals} used (--agent-evals); nothing was evaluated\n"
        now = harvest(work, ctl.problem, files, task)
        if now.unchanged:
            code = parent_code(parent)  # unchanged: the parent's own files
        elif now.code is None:
            return f"not evaluated: {now.reason}\n"
        else:
            code = now.code
        evals += 1
        out = await evaluate_on_train(ctl, code)
        left = ctl.cfg.agent_evals - evals
        text = outcome_text(out.status, out.score, out.metrics, out.artifacts)
        return f"evaluation on the training data:\n{text}\n[evaluations left: {left}]\n"

    ctl.stats.llm_in_flight += 1  # --max-calls counts it as spent while it runs
    ctl._refresh()
    base = Path(tempfile.mkdtemp(prefix="evolve-agent-"))
    try:
        work, tools = base / "w", base / "t"
        work.mkdir()
        tools.mkdir()
        lay_out(work, files, task)
        run = await run_command(
            bwrap,
            task_argv(argv, task),
            work,
            tools,
            answer,
            timeout_s=ctl.cfg.agent_timeout_s,
            network=ctl.cfg.agent_network,
            env_names=ctl.cfg.agent_env,
            resources=CommandResources(ctl.cfg.agent_memory_mb, ctl.cfg.agent_procs),
            slot=it,
        )
        got = harvest(work, ctl.problem, files, task)
    finally:
        ctl.stats.llm_in_flight -= 1
        shutil.rmtree(base, ignore_errors=True)
    reason = _reason(run, got)
    call = _store(ctl, it, island, parent.program_id, task, run, got.code, reason, evals, calls)
    marker.unlink(missing_ok=True)
    return call, parent


def _reason(run: CommandRun, got: Harvest) -> str:
    if got.code is not None:
        return f"the command {run.how}"
    tail = run.stderr_tail.strip()
    said = f"; its stderr ends: {tail[-300:]}" if tail and run.returncode != 0 else ""
    return f"the command {run.how}: {got.reason}{said}"


def _store(
    ctl: Host,
    it: int,
    island: int,
    parent_id: str,
    task: str,
    run: CommandRun,
    code: str | None,
    reason: str,
    evals: int,
    calls: list[dict],
) -> LlmCall:
    usage = command_cost.parse(run.stdout)
    if not usage.reported and ctl.cfg.budget_usd is not None:
        ctl.observer.note(f"iteration {it}: the command reported no cost; --budget-usd misses it")
    outcome: dict[str, object] = {"code": code, "reason": reason, "evals": evals}
    outcome["returncode"] = run.returncode
    outcome |= {"oom_killed": run.pressure.oom_killed, "procs_capped": run.pressure.procs_capped}
    outcome |= {"eval_calls": calls, "stdout_tail": cut(run.stdout, OUTPUT_TAIL, tail=True)}
    outcome |= {"stderr_tail": run.stderr_tail}
    call = LlmCall(
        run_id=ctl.run_id, iteration=it, island=island, model=COMMAND_MODEL,
        edit_format=ctl.cfg.edit_format, prompt=[{"role": "user", "content": task}],
        reply=json.dumps(outcome), prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd,
        latency_s=run.seconds, parent_id=parent_id, purpose=CallPurpose.AGENT,
        decision=f"--proposer command: {(command_argv(ctl.cfg.proposer) or ['?'])[0][:100]}",
    )  # fmt: skip
    ctl.archive.insert_llm_call(call)
    ctl.stats.calls += 1
    ctl.stats.add_call(usage.prompt_tokens, usage.completion_tokens, usage.cost_usd)
    ctl._refresh()
    return call
