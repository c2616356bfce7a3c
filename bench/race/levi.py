"""LEVI 0.1 in the race: `levi.evolve_code` called by bench/race/peer_side/levi_driver.py in LEVI's venv.

The seed program is the problem's seed file unchanged; the function signature LEVI asks for
is the first function of the seed's EVOLVE-BLOCK. LEVI exec's each candidate in its worker
process and calls score_fn(fn); the race's score_fn (scorer.levi_score) scores the module's
text with `evolve eval` and returns {"score": our train score, metrics...}, or {"error": text}
for a failed candidate (LEVI shows recent errors to its meta-advice model).

The budget: one "dollar" per answered call and N dollars (levi_driver.py), exact. When its
budget is spent LEVI stops at once, under any budget type (dollars, evaluations, seconds): it
evaluates nothing more and cancels evaluations in flight, so the candidates of its last calls
are never scored. That is LEVI's own behaviour, kept; at the tiny budgets of a smoke test
(N = 3) it means every candidate after the seeds is dropped.

Settings (LEVI's defaults, except):
  model                 the shared server through the proxy, as both LEVI's "paradigm" and
                        "mutation" model (its README: `levi.LM(..., api_base=...)` for a local
                        server; there is one model here)
  pipeline.max_tokens   the model's profile (its default 16,384 is past the model's window)
  pipeline              n_eval_processes 2 (evolve's --parallel default; LEVI's default 4 on a
                        two-core machine), eval_timeout above `evolve eval`'s own
  init                  its seed-diversification phase scaled to the budget. By default it
                        writes 4 diverse seeds and 20 variants of each of 5 seeds: about 104
                        calls, 14% of the 750 evaluations of LEVI's transaction-scheduling
                        run (as LEVI's authors report it). At N calls the race keeps that share: about 0.14 N calls,
                        in at most 4 diverse seeds (below 750 calls the defaults alone would
                        spend a small budget on initialisation)
  problem_description   the task (common.task_text)
LEVI takes no random seed: its runs differ by chance, not by the race's seed.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from bench.race.common import PEER_SIDE, Ctx, RunResult, race_peer, task_text

NAME = "levi"
REQUIREMENT = "levi-evolve==0.1.1"
INIT_SHARE = 104 / 750  # LEVI's default initialisation against its published budget


def init_config(calls: int) -> dict:
    """LEVI's InitConfig scaled to `calls`: 4 diverse seeds and 20 variants per seed at 750."""
    budget = max(2, round(INIT_SHARE * calls))
    seeds = min(4, max(1, budget // 6))
    variants = max(1, (budget - seeds) // (seeds + 1))
    return {"n_diverse_seeds": seeds, "n_variants_per_seed": variants}


def init_settings(ctx: Ctx) -> dict:
    """init_config() with the model's reply limit on the diverse seeds' calls (LEVI's
    default there is 16,384; its variant calls ask for 4,096, which it does not let us set:
    the server cuts any reply at the end of its window)."""
    return {**init_config(ctx.calls), "diversity_llm_kwargs": {"max_tokens": ctx.max_tokens}}


def function_signature(seed_code: str) -> str:
    """`def name(args) -> ret:` of the first function inside the EVOLVE-BLOCK."""
    lines = seed_code.splitlines()
    start = next((i for i, ln in enumerate(lines) if "EVOLVE-BLOCK-START" in ln), 0)
    for node in ast.parse(seed_code).body:
        if isinstance(node, ast.FunctionDef) and node.lineno > start:
            ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            return f"def {node.name}({ast.unparse(node.args)}){ret}:"
    raise ValueError("no function in the seed's EVOLVE-BLOCK")


def settings(ctx: Ctx, api_base: str) -> dict:
    return {
        "problem_description": task_text(ctx.problem),
        "function_signature": function_signature(ctx.seed_code),
        "seed_program": ctx.seed_code,
        "api_base": api_base,
        "calls": ctx.calls,
        "llm_timeout_s": 900,
        "output_dir": str(ctx.work / "levi-out"),
        "init": init_settings(ctx),
        "pipeline": {"n_eval_processes": 2, "eval_timeout": ctx.eval_timeout_s + 60,
                     "max_tokens": ctx.max_tokens},
    }


def run(ctx: Ctx, venvs: Path) -> RunResult:
    def launch(py: Path, api_base: str) -> tuple[list[str], Path]:
        path = ctx.work / "levi_settings.json"
        path.write_text(json.dumps(settings(ctx, api_base), indent=2))
        return [str(py), str(PEER_SIDE / "levi_driver.py"), str(path)], ctx.work

    def shown(api_base: str) -> dict:
        s = settings(ctx, api_base)
        kept = {k: v for k, v in s.items() if k not in ("seed_program", "problem_description")}
        return {**kept, "problem_description": "common.task_text(problem)"}

    return race_peer(NAME, REQUIREMENT, ctx, venvs, launch, shown)
