"""Fill a runs dir with a realistic synthetic archive, to benchmark views over the archive.

Writes through evolve.archive (Archive, insert_statement) so the schema is the real one,
but stores each run's programs, LLM calls and migrations in one transaction, so 10,000
programs take seconds. Deterministic for a given --seed, timestamps included.

    python bench/make_archive.py OUT_RUNS_DIR [--runs 20] [--programs 10000] [--seed 0] [--force]
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import random
import sys
import time
from pathlib import Path

from rich.progress import Progress

from evolve.archive import Archive, ProgramRow, trees
from evolve.archive.rows import insert_statement

PROBLEMS = {  # name: (policy function, the variables its block mixes, two metric names)
    "binpack": ("priority(item, bins)", ("fit", "waste", "cap"), ("excess_pct", "bins")),
    "txn_scheduling": ("schedule(txns, locks)", ("cost", "load", "wait"), ("makespan", "aborts")),
    "eplb": ("rebalance(load, replicas)", ("heat", "skew", "spare"), ("imbalance", "moves")),
    "spot_scheduling": ("decide(state, prices)", ("risk", "slack", "price"), ("cost", "misses")),
}
MODELS = ["gpt-4.1-mini", "gpt-4.1", "claude-sonnet-4", "qwen3-coder-30b"]
STATUSES = ["ok", "runtime_error", "syntax_error", "timeout", "invalid_edit", "duplicate"]
WEIGHTS = [70, 10, 5, 5, 5, 5]
ERRORS = {"runtime_error": "ZeroDivisionError: float division by zero"}
ERRORS |= {"syntax_error": "SyntaxError: invalid syntax", "timeout": "TimeoutError: over 10 s"}
# Candidate code may hold anything; a web view must show these inert (run 0, two failures).
HOSTILE = ["# </textarea><script>alert(1)</script>", "# <img src=x onerror=alert(1)>"]
LLM_INSERT = """INSERT INTO llm_calls (run_id, iteration, island, parent_id, second_parent_id,
   edit_format, model, prompt_json, reply, error, prompt_tokens, completion_tokens,
   cost_usd, latency_s, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"""  # insert_llm_call's


def block_line(rng: random.Random, vs: tuple[str, ...]) -> str:
    """One plausible line (or two, for an `if`) of policy arithmetic in the EVOLVE-BLOCK."""
    a, b = rng.sample(vs, 2)
    c, d = rng.uniform(0.05, 3), rng.uniform(0.01, 1)
    return rng.choice(
        [
            f"    {a} = {a} * {c:.3f} + {d:.3f} * {b}",
            f"    if {a} > {c:.2f}:\n        {b} -= {d:.3f}",
            f"    {a} = _clip({a}, {-c:.2f}, {c + d:.2f})",
            f"    {a} = math.log1p(abs({a})) * {c:.3f}",
            f"    {b} += {d:.3f} * math.tanh({a} - {c:.2f})",
            f"    # penalise {a} when {b} is high ({rng.randint(1, 99)}% of cases)",
        ]
    )


def render(problem: str, block: list[str]) -> str:
    """The whole program: a fixed header and harness around the evolved block."""
    sig, (a, b, c), _ = PROBLEMS[problem]
    head = f'''"""Policy for {problem}.

Scores each option; the evaluator picks the highest. Only the block evolves.
"""

import math


def _clip(x, lo, hi):
    return max(lo, min(hi, x))


def {sig}:
    """Return the priority of one option."""
    {a}, {b}, {c} = 1.0, 0.5, 0.25
    # EVOLVE-BLOCK-START'''
    tail = f"""    # EVOLVE-BLOCK-END
    return {a} - {b} + 0.1 * {c}


def run(instances):
    total = 0.0
    for inst in instances:
        total += {sig.split("(")[0]}(*inst)
    return total / max(1, len(instances))
"""
    return "\n".join([head, *block, tail])


def mutate(rng: random.Random, problem: str, block: list[str]) -> list[str]:
    """A child block: one to three lines replaced, inserted or dropped."""
    out, vs = list(block), PROBLEMS[problem][1]
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.45 and out:
            out[rng.randrange(len(out))] = block_line(rng, vs)
        elif op < 0.8 and len(out) < 45:  # keeps the program under ~80 lines
            out.insert(rng.randint(0, len(out)), block_line(rng, vs))
        elif len(out) > 12:
            out.pop(rng.randrange(len(out)))
    return out


def llm_call(
    rng: random.Random, problem: str, parent: str, old: list[str], new: list[str], fmt: str
) -> tuple[str, str, int, int]:
    """The prompt (system + user, a few KB), the reply (SEARCH/REPLACE blocks for a diff, else
    the whole new block), and token counts."""
    system = (
        f"You are an expert in {problem.replace('_', ' ')} heuristics and Python. You improve"
        " a policy function step by step. Keep the function signature, never import modules"
        " beyond the standard library, and keep every evaluation under 10 seconds.\n" * 3
    )
    past = "".join(f"- attempt {i}: score {rng.random():.4f}\n" for i in range(12))
    user = (
        f"# Current program\n```python\n{parent}\n```\n\n## Recent attempts\n{past}\n"
        "## Task\nPropose one focused improvement to the code inside the EVOLVE-BLOCK. Answer"
        " with one or more SEARCH/REPLACE blocks.\n"
    )
    sm, nl = difflib.SequenceMatcher(a=old, b=new), "\n"
    edits = "".join(
        f"<<<<<<< SEARCH\n{nl.join(old[i1:i2])}\n=======\n{nl.join(new[j1:j2])}\n>>>>>>> REPLACE\n"
        for tag, i1, i2, j1, j2 in sm.get_opcodes()
        if tag != "equal"
    )
    if fmt != "diff":
        edits = f"```python\n{nl.join(new)}\n```\n"
    reply = f"Weight the {PROBLEMS[problem][1][0]} term by the remaining slack.\n\n{edits}"
    prompt = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return json.dumps(prompt), reply, len(system + user) // 4, len(reply) // 4


def dead_pid() -> int:
    """A pid with no process behind it: the `running` run's owner, so it shows interrupted."""
    pid = 4_000_000  # near Linux's largest pid
    while Path(f"/proc/{pid}").exists():
        pid += 1
    return pid


def write_run(archive: Archive, rng: random.Random, i: int, n: int, t0: float) -> int:
    """Run number `i`: `n` programs (seed included) from time t0; returns its LLM calls."""
    problem = list(PROBLEMS)[i % len(PROBLEMS)]
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(t0))
    run_id = f"{problem}-{stamp}-{rng.getrandbits(16):04x}"
    fn, vs, names = PROBLEMS[problem][0].split("(")[0], PROBLEMS[problem][1], PROBLEMS[problem][2]
    models = rng.sample(MODELS, rng.randint(1, 2))
    config = {"problem_dir": f"problems/{problem}", "iterations": n - 1, "seed": i}
    config |= {"models": [{"name": m} for m in models], "num_islands": 4, "edit_format": "diff"}
    archive.create_run(run_id, problem, f"problems/{problem}", config, n - 1)
    blocks = {0: [block_line(rng, vs) for _ in range(rng.randint(20, 28))]}
    scores = {0: rng.uniform(0.3, 0.6)}
    islands: list[list[int]] = [[0] for _ in range(4)]  # the ok iterations each island picks
    best, t, calls = 0, t0, 0
    hostile = {7: 0, 13: 1} if i == 0 else {}
    with archive.tx() as db:
        for it in range(n):
            t += rng.uniform(4, 40)
            isl, parent, second, kind, status = it % 4, None, None, "seed", "ok"
            block, pool = blocks[0], islands[it % 4]
            if it:
                r, kind = rng.random(), "mutation"
                top = sorted(pool, key=scores.__getitem__)[-5:]
                parent = top[-1] if r < 0.5 else rng.choice(top if r < 0.8 else pool)
                block = mutate(rng, problem, blocks[parent])
                others = [q for q in pool if q != parent]
                if rng.random() < 0.08 and others:
                    second, kind = rng.choice(others), "crossover"
                    block = block[: len(block) // 2] + blocks[second][len(blocks[second]) // 2 :]
                status = rng.choices(STATUSES, WEIGHTS)[0]
                if it in hostile:  # failures, so no child inherits the text
                    status = ("syntax_error", "runtime_error")[hostile[it]]
                    block = [*block[:2], "    " + HOSTILE[hostile[it]], *block[2:]]
                if status == "duplicate":
                    block = blocks[parent]
            code = render(problem, block)
            par_id = f"{run_id}:{parent}" if parent is not None else None
            p = ProgramRow(f"{run_id}:{it}", run_id, problem, it, isl, status, code, par_id)
            p.kind, p.created_at, p.code_hash = kind, t, hashlib.sha256(code.encode()).hexdigest()
            if parent is not None:
                p.edit_kind, p.model = rng.choice(["diff", "diff", "block"]), rng.choice(models)
                if second is not None:  # a crossover always answers with a whole block
                    p.edit_kind, p.second_parent_id = "block", f"{run_id}:{second}"
                pcode = render(problem, blocks[parent])
                lines = pcode.splitlines(True), code.splitlines(True)
                p.diff = "".join(difflib.unified_diff(*lines, "parent", "child"))
                fmt = "crossover" if second is not None else p.edit_kind
                prompt, reply, ptok, ctok = llm_call(
                    rng, problem, pcode, blocks[parent], block, fmt
                )
                cost, latency = round(ptok * 4e-7 + ctok * 1.6e-6, 6), rng.uniform(2, 30)
                row: tuple = (run_id, it, isl, par_id, p.second_parent_id, fmt, p.model, prompt)
                row += (reply, None, ptok, ctok, cost, latency, t - rng.uniform(1, 4))
                p.llm_call_id, calls = db.execute(LLM_INSERT, row).lastrowid, calls + 1
            if status == "ok":
                gain = 0.0 if parent is None else rng.gauss(-0.004, 0.012) / (1 + it / 200)
                score = min(0.999, scores[parent if parent is not None else 0] + gain)
                scores[it], blocks[it] = score, block
                pool.append(it)
                p.score, p.eval_s, div = round(score, 6), rng.uniform(0.5, 9), rng.random()
                p.scores = {"quick": round(score + rng.gauss(0, 0.01), 6), "train": p.score}
                p.metrics = {names[0]: round(rng.uniform(0, 10) * (1 - score), 4)}
                p.metrics |= {names[1]: rng.randint(50, 500), "eval_s": round(p.eval_s, 3), "n": 64}
                p.features = {"code_length": float(len(code)), "diversity": round(div, 4)}
                p.cell = f"{min(9, len(block) // 5)}-{int(div * 10)}"  # Features.cell's format
                if score > scores[best] or it == 0:  # a new best gets a held-out score
                    best = it
                    p.test_score = round(score - abs(rng.gauss(0, 0.01)), 6)
                    p.test_metrics = {names[0]: round(rng.uniform(0, 10) * (1 - score), 4)}
            elif status == "invalid_edit":
                p.code = p.code_hash = p.diff = None
                p.artifacts = {"error": "the reply could not be applied: SEARCH 1 matches nothing"}
            elif status == "duplicate":
                p.artifacts = {"error": f"duplicate of {par_id}: already evaluated in this run"}
            else:
                p.eval_s = 10.0 if status == "timeout" else rng.uniform(0.1, 3)
                where = f'File "candidate.py", line {rng.randint(14, 60)}, in {fn}'
                p.artifacts = {"stderr": f"Traceback (most recent call last):\n  {where}\n"}
                p.artifacts["stderr"] += ERRORS[status] + "\n"
                if it in hostile:
                    p.artifacts["stderr"] += HOSTILE[1 - hostile[it]] + "\n"
            db.execute(*insert_statement(p, *trees.store(db, p.program_id, p.code)))
            if it and it % 50 == 0:  # ring migration: each island's best to the next island
                for k in range(4):
                    top_k, dest = max(islands[k], key=scores.__getitem__), (k + 1) % 4
                    if top_k not in islands[dest]:
                        islands[dest].append(top_k)
                    db.execute(
                        "INSERT OR IGNORE INTO migrations VALUES (?,?,?,?)",
                        (run_id, f"{run_id}:{top_k}", dest, it),
                    )
    settle(archive, run_id, i, n, t0, t)
    return calls


def settle(archive: Archive, run_id: str, i: int, n: int, t0: float, t: float) -> None:
    """Runs 1, 2 and 3 end failed, stopped and `running` with a dead owner, short of their
    target; the rest finish."""
    ends: dict[int, tuple[str, str | None]] = {
        1: ("failed", "evaluator crashed: sandbox image evolve-sandbox:latest not found")
    }
    ends |= {2: ("stopped", "budget of $5 spent ($5.0131)"), 3: ("running", None)}
    status, reason = ends.get(i, ("finished", None))
    archive.set_run_status(run_id, status, reason, None if status == "finished" else n + 199)
    pid = dead_pid() if status == "running" else 1000 + i
    with archive.tx() as db:
        db.execute(
            "UPDATE runs SET created_at=?, updated_at=?, owner_pid=?, owner_host=? WHERE run_id=?",
            (t0, t, pid, "bench-host", run_id),
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, metavar="OUT_RUNS_DIR")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--programs", type=int, default=10_000, help="in all, split over the runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="delete an existing archive.db first")
    args = ap.parse_args()
    db_path = args.out / "archive.db"
    if db_path.exists() and not args.force:
        print(f"error: {db_path} exists; pass --force to replace it", file=sys.stderr)
        return 2
    if args.runs < 1 or args.programs < args.runs:
        print("error: need --runs >= 1 and --programs >= --runs", file=sys.stderr)
        return 2
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    started, rng = time.perf_counter(), random.Random(args.seed)
    archive = Archive(args.out)
    t_base = 1_735_689_600.0 + args.seed * 86_400  # 2025-01-01 UTC; runs spread over 4 days
    calls = 0
    with Progress() as bar:
        task = bar.add_task("runs", total=args.runs)
        for i in range(args.runs):
            n = args.programs // args.runs + (i < args.programs % args.runs)
            calls += write_run(archive, rng, i, n, t_base + i * 4 * 86_400 / args.runs)
            bar.advance(task)
    archive.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    archive.close()
    size, took = db_path.stat().st_size / 1e6, time.perf_counter() - started
    print(
        f"wrote {args.runs} runs, {args.programs} programs, {calls} llm calls to {db_path}:", end=""
    )
    print(f" {size:.1f} MB in {took:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
