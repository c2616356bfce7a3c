"""evolve's side of bench/controller_overhead.py.

- `ConstantSandbox`: a bench-only Sandbox that scores a candidate without
  running it (no subprocess): "sandbox excluded".
- `fill_archive`: pre-populate a run with synthetic `ok` programs through
  Archive.insert_program (distinct code, real scores, MAP-Elites cells).
- run as a script: resume a run in this process through evolve.resume, as
  `evolve resume` does, but with ConstantSandbox.

    python bench/overhead_ours.py RUNS_DIR RUN_ID ITERATIONS
"""

from __future__ import annotations

import json
import random
import sys
import time

from overhead_common import score_of, value_of

from evaluators.sandbox import EvalRequest, EvalResult, Status
from evolve.archive import Archive, ProgramRow
from evolve.cli.progress import RunProgress
from evolve.edits import normalized_hash
from evolve.pipeline.config import RunConfig
from evolve.problem.load import load_problem
from evolve.search.population import Features


class ConstantSandbox:
    """Implements evaluators.sandbox.Sandbox: the fixture evaluator's score, computed
    from the code's text in the calling thread; nothing is run."""

    name = "bench-constant"

    def evaluate(self, request: EvalRequest) -> EvalResult:
        t0 = time.perf_counter()
        s = score_of(value_of(request.program_code))
        metric = "combined_score" if request.fmt == "openevolve" else "score"
        return EvalResult(status=Status.OK, score=s, metrics={metric: s}, eval_s=time.perf_counter() - t0)

    def close(self) -> None:
        pass


def fill_archive(runs_dir: str, run_id: str, total: int, synthetic: list[dict], seed: int = 0) -> int:
    """Insert synthetic programs until the run holds `total` programs (seed included).
    Returns the number of finished iterations afterwards (programs minus the seed)."""
    archive = Archive(runs_dir)
    try:
        run = archive.get_run(run_id)
        cfg = RunConfig.from_json(run["config"])
        problem = load_problem(run["problem_dir"])
        features = Features(problem.seed_code, problem.feature_dims, problem.feature_bins)
        existing = archive.programs(run_id, code=True)
        need = total - len(existing)
        if need > len(synthetic):
            raise ValueError(f"need {need} synthetic programs, got {len(synthetic)}")
        rng = random.Random(seed)
        parents = [p.program_id for p in existing if p.status == "ok"]
        it = max(p.iteration for p in existing)
        metric = "combined_score" if problem.fmt == "openevolve" else "score"
        for spec in synthetic[:max(0, need)]:
            it += 1
            code, score = spec["code"], spec["score"]
            metrics = {metric: score}
            feats = features.values(code, metrics)
            row = ProgramRow(
                program_id=f"{run_id}:{it}", run_id=run_id, problem=problem.name, iteration=it,
                island=it % cfg.num_islands, status="ok", code=code, parent_id=rng.choice(parents),
                kind="mutation", edit_kind="full", model="synthetic", code_hash=normalized_hash(code),
                diff="", score=score, metrics=metrics, features=feats, cell=features.cell(feats),
                eval_s=0.0, created_at=time.time(),
            )
            archive.insert_program(row)
            parents.append(row.program_id)
        archive.set_run_status(run_id, "stopped", "benchmark: pre-populated", target=it)
        n = archive.db.execute("SELECT COUNT(*) FROM programs WHERE run_id=?", (run_id,)).fetchone()[0]
        if n != total:
            raise RuntimeError(f"run {run_id} holds {n} programs, expected {total}")
        return it
    finally:
        archive.close()


def drive(runs_dir: str, run_id: str, iterations: int) -> int:
    """`evolve resume RUN_ID --iterations N`, in process, with ConstantSandbox."""
    import evolve

    summary = evolve.resume(run_id, runs_dir=runs_dir, iterations=iterations, sandbox=ConstantSandbox(),
                            observer=RunProgress(enabled=False))
    print(json.dumps({"status": summary.status, "reason": summary.reason,
                      "iterations_done": summary.iterations_done}))
    return 0 if summary.status == "finished" else 1


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    sys.exit(drive(sys.argv[1], sys.argv[2], int(sys.argv[3])))
