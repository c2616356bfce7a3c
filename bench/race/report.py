"""The race's numbers: one row per run, one summary per problem and framework, one table."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench.race.common import ROOT, Ctx, RunResult, data_seed_flag
from bench.race.measure import call_stats, yields
from evolve.benchmark.normalise import References, normalised
from evolve.edits.apply import normalized_hash


def held_out(ctx: Ctx, code: str, refs: References) -> tuple[float | None, str]:
    """The held-out score of `code` (`evolve eval --split test`); the seed's is known."""
    if normalized_hash(code) == normalized_hash(ctx.seed_code):
        return refs.seed_test, ""
    path = ctx.work / "best_program.py"
    path.write_text(code)
    test = ctx.problem.test_split or "test"
    cmd = [sys.executable, "-m", "evolve.cli", "eval", str(ctx.problem_dir), str(path),
           "--split", test, "--json", "--sandbox", ctx.sandbox, *data_seed_flag(ctx.data_seed)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None, f"held-out evaluation failed: {proc.stderr.strip()[-300:]}"
    if out.get("status") != "ok":
        return None, f"held-out evaluation: {out.get('status')}"
    return out.get("score"), ""


def row(ctx: Ctx, res: RunResult, refs: References) -> dict:
    """Everything the race keeps of one run."""
    test, err = held_out(ctx, res.best_code, refs) if res.best_code else (None, "no program")
    stats = call_stats(res.calls)
    got = yields(res.items, normalized_hash(ctx.seed_code), ctx.seed_train)
    n = stats["calls"]
    return {
        "problem": ctx.problem.name, "framework": res.framework, "version": res.version,
        "seed": ctx.seed, "budget": ctx.calls, **stats,
        "tokens": stats["prompt_tokens"] + stats["completion_tokens"],
        **got, **{f"{k}_share": (v / n if n else None) for k, v in got.items()},
        "programs": sum(1 for it in res.items if it["hash"] and not it.get("clone")),
        "evaluations": res.evaluations, "agent_evals": res.agent_evals,
        "agent_evals_per_call": (res.agent_evals / n if n and res.agent_evals is not None else None),
        "refused": res.refused, "failed_requests": res.failed,
        "wall_s": res.wall_s, "seed_train": ctx.seed_train, "best_train": res.best_train,
        "seed_held_out": refs.seed_test, "best_baseline_held_out": refs.best_baseline_test,
        "best_baseline": refs.best_baseline_name, "held_out": test,
        "held_out_delta": None if test is None or refs.seed_test is None else test - refs.seed_test,
        "normalised": normalised(test, refs.seed_test, refs.best_baseline_test),
        "exit_code": res.exit_code, "timed_out": res.timed_out,
        "error": "; ".join(e for e in (res.error, err) if e),
        "latencies_s": [round(c["latency_s"], 3) for c in res.calls],
        "settings": res.settings, "best_code": res.best_code,
    }


def summarise(rows: list[dict]) -> list[dict]:
    """Per problem and framework: medians and spreads over seeds, shares over all calls."""
    out = []
    keys = sorted({(r["problem"], r["framework"]) for r in rows}, key=lambda k: (k[0], _order(k[1])))
    for problem, fw in keys:
        rs = [r for r in rows if r["problem"] == problem and r["framework"] == fw]
        calls = sum(r["calls"] for r in rs)
        norm = [r["normalised"] for r in rs if r["normalised"] is not None]
        lat = [x for r in rs for x in r["latencies_s"]]
        out.append({
            "problem": problem, "framework": fw, "runs": len(rs),
            "normalised_median": _median(norm), "normalised_min": min(norm, default=None),
            "normalised_max": max(norm, default=None),
            "held_out_delta_median": _median([r["held_out_delta"] for r in rs if r["held_out_delta"] is not None]),
            "calls_median": _median([r["calls"] for r in rs]), "calls_total": calls,
            **{f"{k}_share": (sum(r[k] for r in rs) / calls if calls else None)
               for k in ("new_programs", "behaviourally_new", "valid")},
            "evaluations_median": _median([r["evaluations"] for r in rs if r.get("evaluations") is not None]),
            "agent_evals_per_call": (sum(r.get("agent_evals") or 0 for r in rs) / calls
                                     if calls and any(r.get("agent_evals") is not None for r in rs)
                                     else None),
            "tokens_median": _median([r["tokens"] for r in rs]),
            "median_latency_s": _median(lat), "wall_s_median": _median([r["wall_s"] for r in rs]),
            "errors": sum(1 for r in rs if r["error"]),
        })
    return out


def table(summary: list[dict]) -> str:
    """Markdown: the frameworks side by side, problem by problem."""
    head = ("| problem | framework | runs | held-out, normalised: median [min, max] | held-out Δ vs seed "
            "| calls | new | behaviourally new | valid | evaluations | agent evals / call | tokens "
            "| median latency s | wall s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for s in summary:
        norm = ("n/a" if s["normalised_median"] is None else
                f"{s['normalised_median']:.1f} [{s['normalised_min']:.1f}, {s['normalised_max']:.1f}]")
        lines.append(
            f"| {s['problem']} | {s['framework']} | {s['runs']}{' (!' + str(s['errors']) + ')' if s['errors'] else ''} "
            f"| {norm} | {_fmt(s['held_out_delta_median'], '+.4g')} | {_fmt(s['calls_median'], '.0f')} "
            f"| {_pct(s['new_programs_share'])} | {_pct(s['behaviourally_new_share'])} "
            f"| {_pct(s['valid_share'])} | {_fmt(s.get('evaluations_median'), '.0f')} "
            f"| {_fmt(s.get('agent_evals_per_call'), '.2f')} "
            f"| {_fmt(s['tokens_median'], '.0f')} "
            f"| {_fmt(s['median_latency_s'], '.1f')} | {_fmt(s['wall_s_median'], '.0f')} |")
    return "\n".join(lines)


def save(path: Path, info: dict, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"info": info, "runs": rows, "summary": summarise(rows)}, indent=2) + "\n")


FRAMEWORK_ORDER = ("evolve", "evolve-agent", "openevolve", "shinka", "levi")


def _order(fw: str) -> int:
    return FRAMEWORK_ORDER.index(fw) if fw in FRAMEWORK_ORDER else len(FRAMEWORK_ORDER)


def _median(xs: list) -> float | None:
    return statistics.median(xs) if xs else None


def _fmt(v, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"
