"""Bounded candidates: one huge program never wedges a run.

A candidate over the problem's size cap ([evaluation] max_code_kb) is recorded `invalid`
with the reason, unevaluated; a parent whose prompt cannot be packed into the model's
window is skipped for good (programs.skip_reason) and the run goes on, resume included;
only when no program can be a parent does the run end, `failed`, with one line.

Runs go through the real CLI (or the real Controller), the local sandbox and the `openai`
SDK against the scripted HTTP server (evolve/testing/scripted_llm.py).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from evaluators.backends import make_sandbox
from evolve.archive import Archive, ProgramRow
from evolve.archive.schema import SCHEMA_VERSION
from evolve.llm import LLMClient, ModelSpec
from evolve.llm.pricing import PriceTable
from evolve.pipeline.config import RunConfig
from evolve.pipeline.controller import Controller
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from evolve.search.population import Population, SelectionPolicy
from evolve.search.prompts import PromptBuilder
from evolve.testing.cli_helpers import archive_json, evolve, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem

# The profile of a model named like a small open-weights one: a 4096-token window.
SMALL_MODEL = "scripted-1.5b"


def block_reply(body: str) -> Reply:
    return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


def edit(k: int) -> Reply:
    """The k-th small answer, different from every other one."""
    return block_reply(f"def f(x):\n    return x + {k} * 0.5\n")


def assignments(n_bytes: int) -> str:
    """About n_bytes of valid Python that the normal form of a hash keeps (no comments)."""
    lines, size, i = [], 0, 0
    while size < n_bytes:
        line = f"_PAD_{i} = {i}\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def comments(n_bytes: int) -> str:
    line = "# a remark that pads this policy far past what a prompt can hold\n"
    return line * (n_bytes // len(line) + 1)


def programs(runs: Path, run_id: str | None = None) -> list[dict]:
    db = sqlite3.connect(runs / "archive.db")
    db.row_factory = sqlite3.Row
    sql = "SELECT * FROM programs" + (" WHERE run_id=?" if run_id else "") + " ORDER BY iteration"
    rows = [dict(r) for r in db.execute(sql, (run_id,) if run_id else ())]
    db.close()
    return rows


def run_row(runs: Path, run_id: str) -> dict:
    db = sqlite3.connect(runs / "archive.db")
    db.row_factory = sqlite3.Row
    row = dict(db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone())
    db.close()
    return row


def small_model_run(url: str, runs: Path, problem: Path, iterations: int) -> list[str]:
    """`evolve run` with a model whose profile gives a 4096-token window, one island, one
    request and one evaluation at a time; every iteration asks the model (no tuned children,
    which need no prompt)."""
    args = run_args(url, runs, "--parallel", "1", "--llm-parallel", "1", "--islands", "1",
                    "--tune-evals", "0", problem=problem, iterations=iterations)  # fmt: skip
    args[args.index("--model") + 1] = SMALL_MODEL
    return args


def one_cell_toy(root: Path, max_code_kb: int | None = None) -> Path:
    """The toy problem with one MAP-Elites cell per island, so the best program is the
    island's only elite: selection must pick it (or skip it)."""
    toy_problem(root)
    toml = (root / "problem.toml").read_text()
    if max_code_kb is not None:
        toml = toml.replace("[evaluation]\n", f"[evaluation]\nmax_code_kb = {max_code_kb}\n")
    (root / "problem.toml").write_text(toml + '[features]\ndimensions = ["value"]\nbins = 1\n')
    return root


def test_a_huge_candidate_is_recorded_invalid_unevaluated_and_the_run_finishes(tmp_path):
    # over the size cap, under the reply limits (the client's 256 KB, the parser's 1 MiB)
    huge = "def f(x):\n    return 10\n" + assignments(200 * 1024)
    script = [block_reply(huge)] + [edit(k) for k in range(1, 8)]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(script, then=edit(9)) as srv:
        r = evolve(
            *run_args(
                srv.base_url,
                runs,
                "--parallel",
                "1",
                "--llm-parallel",
                "1",
                problem=toy_problem(tmp_path / "toy"),
                iterations=5,
            )
        )
        requests = [json.dumps(q["messages"]) for q in srv.requests]
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.splitlines()[0].strip()
    rows = [p for p in programs(runs, run_id) if p["kind"] != "tune"]  # tuned: no iteration
    assert [p["kind"] for p in rows].count("seed") == 1 and len(rows) == 6  # and 5 iterations
    big = rows[1]
    size = len(huge.encode()) + len("# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-END\n")
    assert size > 200 * 1024
    assert big["status"] == "invalid"
    assert json.loads(big["artifacts_json"])["error"] == (
        f"code is {size:,} bytes; this problem allows at most 65,536 ([evaluation] max_code_kb)"
    )
    assert big["eval_s"] is None and big["score"] is None  # never sent to the sandbox
    assert big["code"] is None and big["diff"] is None  # kept once, as the reply, not twice
    assert all(p["status"] == "ok" for p in rows[2:])
    assert run_row(runs, run_id)["status"] == "finished"
    screen = " ".join(r.stderr.split())  # the display wraps long lines
    assert f"iteration 1 recorded invalid, unevaluated: code is {size:,} bytes" in screen
    # the model is told why, as the parent's attempts; it never sees the huge code again
    assert any("this problem allows at most 65,536" in q for q in requests)
    assert not any("_PAD_1000 = 1000" in q for q in requests)


def test_an_unpackable_best_parent_is_skipped_recorded_and_stays_skipped_on_resume(tmp_path):
    huge = "def f(x):\n    return 10\n" + comments(200 * 1024)
    script = [block_reply(huge)] + [edit(k) for k in range(1, 12)]
    runs = tmp_path / "runs"
    problem = one_cell_toy(tmp_path / "toy", max_code_kb=512)
    with ScriptedLLM.from_list(script, then=edit(20)) as srv:
        r = evolve(*small_model_run(srv.base_url, runs, problem, iterations=6))
        assert r.returncode == 0, r.stderr
        run_id = r.stdout.splitlines()[0].strip()
        assert "4096-token window" in r.stderr
        big_id = f"{run_id}:1"
        rows = programs(runs, run_id)
        assert len(rows) == 7 and run_row(runs, run_id)["status"] == "finished"
        big = rows[1]
        assert big["status"] == "ok" and big["score"] == 0.0  # f(3) == 10: the best there is
        assert big["skip_reason"].startswith("the prompt needs about ")
        assert "4096-token window" in big["skip_reason"]
        screen = " ".join(r.stderr.split())  # the display wraps long lines
        assert (
            f"program {big_id} (score 0) is skipped as a parent from now on: the prompt" in screen
        )
        assert [p["program_id"] for p in rows if p["skip_reason"]] == [big_id]
        first = len(srv.requests)

        r2 = evolve("resume", run_id, "--iterations", "10", "--runs-dir", runs, "--no-progress")
        requests = [json.dumps(q["messages"]) for q in srv.requests]
    assert r2.returncode == 0, r2.stderr
    assert "skipped as a parent" not in r2.stderr  # remembered, not found out again
    rows = programs(runs, run_id)
    assert len(rows) == 11 and run_row(runs, run_id)["status"] == "finished"
    assert all(p["status"] == "ok" for p in rows)
    assert len(requests) > first
    db = sqlite3.connect(runs / "archive.db")
    parents = {
        r[0] for r in db.execute("SELECT parent_id FROM llm_calls WHERE run_id=?", (run_id,))
    }
    db.close()
    assert big_id not in parents  # never sent as a parent, nor shown as an inspiration
    assert not any("pads this policy" in q for q in requests)
    best = archive_json(runs, "best", "--problem", "toy")
    assert best["program_id"] == big_id  # still the run's best result
    assert best["skip_reason"].startswith("the prompt needs about ")
    shown = evolve("archive", "show", big_id, "--runs-dir", runs)
    assert "not a parent" in shown.stdout and "the prompt needs about" in shown.stdout


def _controller_run(tmp_path: Path, srv: ScriptedLLM, problem_dir: Path, **cfg) -> tuple:
    problem = load_problem(problem_dir)
    config = RunConfig(
        problem_dir=str(problem.root),
        models=(ModelSpec("scripted"),),
        api_base=srv.base_url,
        parallel=1,
        llm_parallel=1,
        sandbox="local",
        llm_backoff_s=0.01,
        **cfg,
    )
    archive = Archive(tmp_path / "runs")
    archive.create_run("r", problem.name, str(problem.root), config.to_json(), config.iterations)
    sandbox = make_sandbox("local", 1, run_id="r")
    llm = LLMClient(config.llm_config(), PriceTable.load(), seed=0)
    ctl = Controller(
        archive,
        "r",
        config,
        problem,
        CandidateEvaluator(problem, sandbox),
        llm,
        prompts=PromptBuilder.for_config(problem, config),
    )

    async def main():
        try:
            return await ctl.run()
        finally:
            await llm.close()

    try:
        return asyncio.run(main()), archive
    finally:
        sandbox.close()


def test_when_no_program_can_be_a_parent_the_run_fails_with_one_line(tmp_path):
    # a seed whose EVOLVE-BLOCK alone overflows the window (the command line refuses it
    # before a run starts; a controller given one anyway must not wedge)
    root = toy_problem(tmp_path / "toy")
    (root / "seed.py").write_text(
        "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n"
        + comments(40 * 1024)
        + "# EVOLVE-BLOCK-END\n"
    )
    with ScriptedLLM.from_list([], then=edit(1)) as srv:
        summary, archive = _controller_run(
            tmp_path, srv, root, iterations=3, context_window=4096, max_tokens=1024
        )
        asked = len(srv.requests)
    assert summary.status == "failed" and asked == 0
    assert summary.reason.startswith("no program can be a parent: every program that scored (1)")
    assert "\n" not in summary.reason and "r:0: the prompt needs about" in summary.reason
    assert archive.get_run("r")["status"] == "failed"
    seed = archive.program("r:0")
    assert seed is not None and seed.skip_reason and "4096-token window" in seed.skip_reason


def test_a_seed_too_big_for_the_window_is_one_line_before_the_run_starts(tmp_path):
    root = toy_problem(tmp_path / "toy")
    (root / "seed.py").write_text(
        "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n"
        + comments(40 * 1024)
        + "# EVOLVE-BLOCK-END\n"
    )
    runs = tmp_path / "runs"
    r = evolve(*small_model_run("http://127.0.0.1:9/v1", runs, root, iterations=3))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "context window" in lines[0], r.stderr
    assert not (runs / "archive.db").exists()  # nothing was started


def test_a_seed_over_the_size_cap_fails_check_and_run_naming_the_setting(tmp_path):
    root = toy_problem(tmp_path / "toy")
    toml = (root / "problem.toml").read_text()
    (root / "problem.toml").write_text(
        toml.replace("[evaluation]\n", "[evaluation]\nmax_code_kb = 1\n")
    )
    (root / "seed.py").write_text(
        "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n"
        + assignments(2000)
        + "# EVOLVE-BLOCK-END\n"
    )
    size = len((root / "seed.py").read_bytes())
    reason = f"code is {size:,} bytes; this problem allows at most 1,024 ([evaluation] max_code_kb)"
    c = evolve("check", root)
    assert c.returncode != 0 and reason in c.stdout
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list([], then=edit(1)) as srv:
        r = evolve(*run_args(srv.base_url, runs, problem=root))
        asked = len(srv.requests)
    assert r.returncode == 2 and asked == 0  # refused before a run exists
    [line] = r.stderr.strip().splitlines()
    assert str(root / "seed.py") in line and reason in line
    assert not (runs / "archive.db").exists()


def _row(it: int, score: float, cell: str = "0", skip: str | None = None) -> ProgramRow:
    return ProgramRow(
        f"r:{it}", "r", "toy", it, 0, "ok", code="x = 1\n", score=score, cell=cell, skip_reason=skip
    )


def test_a_skipped_program_is_never_parent_partner_inspiration_or_migrant():
    pop = Population(2, SelectionPolicy(), seed=3)
    for it, score, cell in ((0, 1.0, "0"), (1, 2.0, "0"), (2, 5.0, "0"), (3, 1.5, "1")):
        pop.add(_row(it, score, cell))
    assert pop.islands[0].elites["0"].program_id == "r:2"
    pop.skip("r:2")
    # the cell falls back to the best of the rest offered to it, not to nothing
    assert pop.islands[0].elites["0"].program_id == "r:1"
    assert pop.best().program_id == "r:2"  # still the best result
    for _ in range(50):
        assert pop.select_parent(0).program_id != "r:2"
        assert pop.select_second_parent("r:1").program_id != "r:2"
        assert "r:2" not in [m.program_id for m in pop.inspirations(0, "r:1")]
    pop.migrate("r:2", 1)
    assert all(pid != "r:2" for pid, _ in pop.migration_plan())
    # an empty island falls back to the best program that may still be a parent
    assert pop.select_parent(1).program_id == "r:1"
    for pid in ("r:0", "r:1", "r:3"):
        pop.skip(pid)
    assert pop.select_parent(0) is None and pop.select_parent(1) is None


def test_a_skip_recorded_in_the_archive_is_read_back_on_rebuild(tmp_path):
    archive = Archive(tmp_path / "runs")
    archive.create_run("r", "toy", "/nowhere", {}, 3)
    archive.insert_program(_row(0, 1.0))
    archive.insert_program(_row(1, 2.0))
    archive.skip_parent("r:1", "too long")
    pop = Population(1, SelectionPolicy(), seed=0)
    for p in archive.programs("r", code=True):
        pop.add(p)
    assert archive.program("r:1").skip_reason == "too long"
    assert pop.islands[0].elites["0"].program_id == "r:0" and pop.skipped == {"r:1"}
    assert pop.best().program_id == "r:1"


def test_an_archive_of_schema_2_gains_the_skip_column(tmp_path):
    runs = tmp_path / "runs"
    Archive(runs).close()
    db = sqlite3.connect(runs / "archive.db")
    db.execute("ALTER TABLE programs DROP COLUMN skip_reason")
    for col in ("purpose", "outcome", "temperature", "decision"):  # schema 4's
        db.execute(f"ALTER TABLE llm_calls DROP COLUMN {col}")
    for table in ("decisions", "meta_notes", "bench_runs"):
        db.execute(f"DROP TABLE {table}")
    db.execute("ALTER TABLE runs DROP COLUMN data_seed")  # schema 5's
    db.execute("ALTER TABLE programs DROP COLUMN code_files")  # schema 7's
    for table in ("blobs", "program_files"):
        db.execute(f"DROP TABLE {table}")
    db.execute("PRAGMA user_version=2")
    db.commit()
    db.close()
    archive = Archive(runs)
    archive.create_run("r", "toy", "/nowhere", {}, 3)
    archive.insert_program(_row(0, 1.0, skip="why"))
    assert archive.program("r:0").skip_reason == "why"
    assert archive.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert archive.meta_notes("r") == [] and archive.decisions("r") == []


def test_the_sandbox_never_sees_an_oversized_candidate(tmp_path):
    """Sent to the toy's evaluator this would be a runtime_error (it has no f)."""
    problem = load_problem(toy_problem(tmp_path / "toy"))
    sandbox = make_sandbox("local", 1, run_id="cap")
    try:
        out = CandidateEvaluator(problem, sandbox).evaluate("x = 1\n" * 20000)
    finally:
        sandbox.close()
    assert out.status == "invalid" and out.score is None
    assert out.artifacts == {
        "error": "code is 120,000 bytes; this problem allows at most 65,536 ([evaluation] max_code_kb)"
    }
