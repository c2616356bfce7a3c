"""What the hostile-reply corpus costs the controller, reply by reply, against a normal reply.

Each reply of evolve/testing/hostile_replies.py goes through the work the controller does with a
reply (evolve/pipeline/candidates.py: the parse limit, the edit, tidying, the clone hash, the size
cap) and, where it makes a candidate, with that candidate's code (features, the tuner's
variants, the prompt it would be a parent in). Time is wall clock on this machine, so it
is reported relative to a normal reply measured in the same run (the median of --repeat
of them), not asserted anywhere.

    python bench/hostile_replies.py                 # the corpus at the 1 MiB parse limit
    python bench/hostile_replies.py --size 200000 --top 10
    python bench/hostile_replies.py --repo OLD --only deep_sum_2950,re_think_flood --timeout 60

--repo times another checkout's evolve (an older commit, say) on the same corpus; --timeout
runs each reply in a forked process and reports one that takes longer as "> S s".
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1 << 20, help="length of the huge replies")
    ap.add_argument("--repeat", type=int, default=21, help="normal replies timed for the median")
    ap.add_argument("--top", type=int, default=0, help="show only the N slowest replies")
    ap.add_argument("--only", default="", help="comma-separated reply names")
    ap.add_argument("--repo", type=Path, default=HERE, help="the checkout whose evolve is timed")
    ap.add_argument("--timeout", type=float, default=0, help="seconds a reply may take (forked)")
    return ap.parse_args(argv)


ARGS = _args(None if __name__ == "__main__" else [])
sys.path.insert(0, str(ARGS.repo.resolve()))
HOSTILE = _load("hostile_replies", HERE / "evolve" / "testing" / "hostile_replies.py")
TOY = _load("toy_problem", HERE / "evolve" / "testing" / "toy_problem.py")

from evolve.archive import LlmCall, ProgramStatus  # noqa: E402
from evolve.pipeline.candidates import new_row, reply_to_row  # noqa: E402
from evolve.pipeline.proposal import shown  # noqa: E402
from evolve.problem.load import Problem, load_problem  # noqa: E402
from evolve.search.population import Features  # noqa: E402
from evolve.search.prompts import PromptBuilder, PromptContext  # noqa: E402
from evolve.search.tune import variants  # noqa: E402

Hostile = HOSTILE.Hostile


def text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def handle(problem: Problem, features: Features, prompts: PromptBuilder, h: Hostile) -> str:
    """The controller's work with one reply; its outcome (status and reason)."""
    parent = new_row("r", problem, 0, 0, problem.seed_code, kind="seed", diff="")
    call = LlmCall(
        run_id="r", iteration=1, island=0, model="m", edit_format=h.fmt, prompt=[],
        reply=h.text, parent_id=parent.program_id, call_id=1,
    )  # fmt: skip
    row = reply_to_row(call, parent, "r", problem)
    if row.status == ProgramStatus.PENDING and row.code is not None:
        features.values(row.code, {})
        variants(row.code)
        row.score = 1.0
        prompts.build(PromptContext(parent=shown(row, full=True), edit_format="diff"))
        return "candidate"
    return f"{row.status}: {row.artifacts.get('error', '')}"


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _child(conn, problem, features, prompts, h) -> None:
    try:
        conn.send(timed(lambda: handle(problem, features, prompts, h)))
    except BaseException as e:  # the old code's failure is a result here
        conn.send((0.0, f"RAISED {type(e).__name__}: {str(e)[:80]}"))


def run_one(problem, features, prompts, h: Hostile, timeout: float) -> tuple[float, str]:
    if not timeout:
        try:
            dt, out = timed(lambda: handle(problem, features, prompts, h))
        except BaseException as e:
            return 0.0, f"RAISED {type(e).__name__}: {str(e)[:80]}"
        return dt, str(out)
    ctx = multiprocessing.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(there, problem, features, prompts, h))
    proc.start()
    if here.poll(timeout):
        dt, out = here.recv()
        proc.join()
        return dt, str(out)
    proc.kill()
    proc.join()
    return float("inf"), f"> {timeout:g} s (killed)"


def main() -> int:
    args = ARGS
    with tempfile.TemporaryDirectory() as tmp:
        problem = load_problem(TOY.toy_problem(Path(tmp) / "toy"))
    features = Features(problem.seed_code, problem.feature_dims, problem.feature_bins)
    prompts = PromptBuilder(problem)
    normal = Hostile("normal", HOSTILE.NORMAL, "block")
    handle(problem, features, prompts, normal)  # warm: imports, template compilation
    base = statistics.median(
        timed(lambda: handle(problem, features, prompts, normal))[0] for _ in range(args.repeat)
    )
    only = {n for n in args.only.split(",") if n}
    items = [h for h in HOSTILE.corpus(args.size) if not only or h.name in only]
    rows = []
    for h in items:
        dt, outcome = run_one(problem, features, prompts, h, args.timeout)
        rows.append((dt, h.name, text_bytes(h.text), outcome))
    done = [r for r in rows if r[0] != float("inf")]
    total_bytes = sum(r[2] for r in rows)
    total_s = sum(r[0] for r in done)
    shown_rows = sorted(rows, reverse=True)[: args.top] if args.top else rows
    print(f"evolve of {args.repo.resolve()}")
    print(f"normal reply: {base * 1000:.2f} ms (median of {args.repeat})")
    print(f"{'reply':26} {'bytes':>10} {'ms':>9} {'x normal':>9}  outcome")
    for dt, name, size, outcome in shown_rows:
        ms = f"{dt * 1000:9.1f} {dt / base:9.0f}" if dt != float("inf") else f"{'-':>9} {'-':>9}"
        print(f"{name:26} {size:>10,} {ms}  {outcome[:70]}")
    worst = max(done) if done else (0.0, "-")
    print(
        f"corpus: {len(rows)} replies, {total_bytes:,} bytes; {total_s:.2f} s in all"
        f" ({total_s / max(1, len(done)) * 1000:.0f} ms a reply,"
        f" {total_s / max(1, len(done)) / base:.0f}x a normal one); slowest {worst[1]}"
        f" {worst[0] * 1000:.0f} ms ({worst[0] / base:.0f}x); {len(rows) - len(done)} over --timeout"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
