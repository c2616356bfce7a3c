"""No reply can stop the controller: the hostile corpus (evolve/testing/hostile_replies.py) through
every path that handles a reply or a candidate's code.

Each reply becomes a row that is a recorded failure (with its reason) or a bounded candidate;
each path (edit parsing, tidying, clone hashing, constant tuning, features, prompt packing,
diffs, meta-notes) returns, whatever the text; and each gives the same answer again, also
from a deep call stack (a resumed run replays the stored reply from wherever it is). The
end-to-end run serves the corpus through the scripted server: the run finishes, the
replies are failed candidates, and `resume` (after the run, and after kill -9) decides
every one the same way. Time is measured by bench/hostile_replies.py, not here.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evaluators.inside.languages import by_suffix
from evolve.archive import LlmCall, ProgramRow, ProgramStatus
from evolve.edits import find_blocks, normalized_hash, unified_diff
from evolve.edits.bounds import MAX_AST_DEPTH, parse_python, reply_limit, text_bytes
from evolve.edits.replies import clean_reply
from evolve.edits.tidy import tidy
from evolve.llm.context_budget import estimate_tokens
from evolve.pipeline.candidates import new_row, reply_to_row
from evolve.pipeline.proposal import shown
from evolve.problem.load import Problem, load_problem
from evolve.search.meta import idea_of, parse_notes
from evolve.search.population import Features
from evolve.search.prompts import PromptBuilder, PromptContext
from evolve.search.tune import Tuner, literals, variants
from evolve.search.versions import block_functions, unversioned
from evolve.testing.cli_helpers import evolve, popen, run_args
from evolve.testing.hostile_replies import Hostile, corpus, f_returning
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem

CORPUS = corpus()
BY_NAME = {h.name: h for h in CORPUS}
FAILED = {ProgramStatus.INVALID_EDIT, ProgramStatus.INVALID}


@pytest.fixture(scope="module")
def problem(tmp_path_factory) -> Problem:
    return load_problem(toy_problem(tmp_path_factory.mktemp("p") / "toy"))


def _seed(problem: Problem) -> ProgramRow:
    return new_row("r", problem, 0, 0, problem.seed_code, kind="seed", diff="")


def _row(problem: Problem, h: Hostile) -> ProgramRow:
    call = LlmCall(
        run_id="r", iteration=1, island=0, model="m", edit_format=h.fmt, prompt=[],
        reply=h.text, parent_id="r:0", call_id=1,
    )  # fmt: skip
    return reply_to_row(call, _seed(problem), "r", problem)


def deep_stack(fn: Callable[[], object], frames: int = 400) -> object:
    """fn() called from `frames` frames deeper than here."""
    return fn() if frames <= 0 else deep_stack(fn, frames - 1)


def _facts(row: ProgramRow) -> tuple:
    return (row.status, row.code, row.code_hash, row.diff, row.edit_kind, row.artifacts)


def test_the_corpus_is_what_it_says():
    sizes = {h.name: text_bytes(h.text) for h in CORPUS}
    assert len(CORPUS) == len(BY_NAME) >= 70
    assert sizes["huge_program"] == reply_limit(64 * 1024) == sizes["huge_over_limit"] - 1
    assert sum(sizes.values()) > 10_000_000
    for bad in ("\ud800", "\x00", "\r\n", "\ufeff", "\u202e"):
        assert any(bad in h.text for h in CORPUS), bad


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_reply_is_a_recorded_failure_or_a_bounded_candidate(problem, name):
    row = _row(problem, BY_NAME[name])
    assert row.status in FAILED | {ProgramStatus.PENDING}, row.status
    if row.status == ProgramStatus.PENDING:
        assert row.code is not None and text_bytes(row.code) <= problem.max_code_bytes
        row.code.encode("utf-8")  # no lone surrogate reaches a file or a sandbox
        assert len(find_blocks(row.code)) == 1 and row.diff and row.code_hash
    else:
        assert row.code is None and row.artifacts["error"].strip()
    # a resumed run makes the row again from the stored reply, from another stack depth
    assert _facts(deep_stack(lambda: _row(problem, BY_NAME[name]))) == _facts(row)


def test_the_breach_replies_are_recorded_as_the_issue_expects(problem):
    """The ~3k-term expression of issue 37 is a candidate (the sandbox compiles it); what
    cannot be parsed or is too big says so."""
    assert _row(problem, BY_NAME["deep_sum_2950"]).status == ProgramStatus.PENDING
    over = _row(problem, BY_NAME["huge_over_limit"])
    assert (
        over.status == ProgramStatus.INVALID_EDIT
        and "at most 1,048,576 are parsed" in over.artifacts["error"]
    )
    big = _row(problem, BY_NAME["huge_program"])
    assert big.status == ProgramStatus.INVALID and "max_code_kb" in big.artifacts["error"]
    many = _row(problem, BY_NAME["sr_thousands_of_blocks"])
    assert "5,242 SEARCH/REPLACE blocks; at most 100 are applied" in many.artifacts["error"]
    grown = _row(problem, BY_NAME["sr_growing"])
    assert grown.status == ProgramStatus.INVALID and "max_code_kb" in grown.artifacts["error"]
    lone = _row(problem, BY_NAME["enc_surrogate_code"])
    assert lone.status == ProgramStatus.INVALID_EDIT and "U+D800" in lone.artifacts["error"]


def _paths(problem: Problem, code: str, reply: str) -> dict[str, object]:
    """Every path the controller takes with a candidate's code (or reply) and its result."""
    features = Features(problem.seed_code, problem.feature_dims, problem.feature_bins)
    prompts = PromptBuilder(problem)
    as_row = new_row("r", problem, 1, 0, code)
    as_row.score = 1.0
    return {
        "tidy": tidy(problem.seed_code, code),
        "hash": normalized_hash(code),
        "hash_cpp": normalized_hash(code, by_suffix(".cpp")),
        "literals": literals(code),
        "variants": variants(code),
        "features": features.values(code, {}),
        "diff": unified_diff(problem.seed_code, code),
        "prompt": prompts.build(PromptContext(parent=shown(as_row, full=True), edit_format="diff")),
        "tokens": estimate_tokens(reply),
        "notes": parse_notes(reply),
        "clean": hashlib.sha256(clean_reply(reply).encode("utf-8", "surrogatepass")).hexdigest(),
        "versions": unversioned(reply, block_functions(code)),
        "idea": idea_of(as_row),
    }


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_every_path_returns_the_same_for_each_reply_as_a_program(problem, name):
    """The reply's text as if it were a stored program's code (cut to the size cap, as
    every stored program is): each path returns, and the same from a deep stack."""
    reply = BY_NAME[name].text
    code = reply[: problem.max_code_bytes]
    first = _paths(problem, code, reply)
    assert deep_stack(lambda: _paths(problem, code, reply)) == first


def test_a_deep_expression_is_never_walked_and_never_tuned(problem):
    """The breach: the tuner's ast.parse overflowed inside the run (and every resume)."""
    program = BY_NAME["deep_sum_2950"].text.split("```python\n")[1].split("```")[0]
    assert parse_python(program) is None  # 2,950 levels: refused, whatever the stack
    assert parse_python(f_returning("+".join(["1"] * 50) + "+x").split("```python\n")[1][:-4])
    row = new_row("r", problem, 5, 0, program, parent_id="r:0")
    row.status, row.score = ProgramStatus.OK, 2952.0
    tuner = Tuner(4)
    deep_stack(lambda: tuner.finished(row, 3.0, True), 600)
    assert tuner.pending == [] and literals(program) == []
    assert MAX_AST_DEPTH == 60


def test_think_and_fences_are_read_as_before(problem):
    """The linear rewrites keep the old reading of <think> sections and fence tags."""
    assert clean_reply("a<think>x</think>b<THINK>y</think>c") == "abc"
    assert clean_reply("plan</think>code") == "code"
    assert clean_reply("a<think>open") == "aopen"
    assert clean_reply("x<think>a</think>y</think>z<think>") == "z"
    assert _row(problem, BY_NAME["re_think_flood"]).status == ProgramStatus.PENDING
    assert _row(
        problem, Hostile("tag", "~~~ python   \ndef f(x):\n    return x + 1\n~~~  \n", "block")
    ).code


# ---------------------------------------------------------------- end to end


def e2e_replies(size: int = 80_000) -> list[Hostile]:
    """The corpus as a run receives it: the huge replies made `size` long, and only those
    the LLM client passes on (JSON under its 256 KB reply cap, valid Unicode: an answer
    with a lone surrogate is a failed call there, and no archive could store it)."""
    return [
        h
        for h in corpus(size)
        if len(json.dumps(h.text)) <= 200_000
        and not any(0xD800 <= ord(c) <= 0xDFFF for c in h.text)
    ]


def responder(replies: list[Hostile], seed: int) -> Callable[[dict], Reply]:
    """Each iteration the run asks of this server gets the next reply of the corpus, and the
    same one when it asks that iteration again (a slot a kill left unanswered). The
    iteration is read off the request's sampling seed (the controller's seed*100003 +
    iteration*16 + resample); a resample or a slot past the corpus gets a plain program."""
    given: dict[int, int] = {}
    lock = threading.Lock()

    def answer(request: dict) -> Reply:
        it, extra = divmod(int(request["seed"]) - seed * 100003, 16)
        with lock:
            if extra == 0 and it not in given and len(given) < len(replies):
                given[it] = len(given)
            k = given.get(it) if extra == 0 else None
        if k is not None:
            return Reply(replies[k].text)
        return Reply(f_returning(f"x + {it}.{extra}1"))

    return answer


def outcomes(runs: Path, run_id: str) -> dict[tuple[str, str], tuple]:
    """(reply, parent code), by their hashes -> what the reply made of that parent: the
    program's code hash, and for one refused before any evaluation its status and reason
    (an evaluated program's artifacts hold timings); a reply that repeated a program of the
    run is a rejected clone."""
    db = sqlite3.connect(runs / "archive.db")
    try:
        rows = db.execute(
            "SELECT c.reply, q.code, p.status, p.artifacts_json, p.code_hash, c.outcome"
            " FROM llm_calls c JOIN programs q ON q.program_id = c.parent_id"
            " LEFT JOIN programs p ON p.llm_call_id = c.call_id"
            " WHERE c.run_id=? AND c.reply IS NOT NULL",
            (run_id,),
        ).fetchall()
    finally:
        db.close()
    out = {}
    for reply, parent, status, artifacts, code_hash, outcome in rows:
        key = (_sha(reply), _sha(parent))
        if status in ("invalid_edit", "invalid"):
            out[key] = (status, artifacts, None)
        elif status is not None:
            out[key] = ("evaluated", None, code_hash)
        elif outcome == "rejected_duplicate":
            out[key] = ("clone", None, None)
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def replayed(runs: Path, run_id: str, problem: Problem) -> int:
    """Every program a stored reply made, made again from the archive as a resumed run
    makes it: the same status, reason and code. Returns how many were checked."""
    db = sqlite3.connect(runs / "archive.db")
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute(
            "SELECT c.*, p.status AS status, p.artifacts_json AS artifacts, p.code_hash AS hash,"
            " q.code AS parent_code FROM llm_calls c"
            " JOIN programs p ON p.llm_call_id = c.call_id"
            " JOIN programs q ON q.program_id = c.parent_id WHERE c.run_id=?",
            (run_id,),
        ).fetchall()
    finally:
        db.close()
    for r in rows:
        call = LlmCall(
            run_id=run_id, iteration=r["iteration"], island=r["island"], model=r["model"],
            edit_format=r["edit_format"], prompt=[], reply=r["reply"], parent_id=r["parent_id"],
            call_id=r["call_id"],
        )  # fmt: skip
        parent = new_row(run_id, problem, 0, 0, r["parent_code"])
        parent.program_id = r["parent_id"]
        row = reply_to_row(call, parent, run_id, problem)
        if r["status"] in ("invalid_edit", "invalid"):
            assert (row.status, row.artifacts) == (r["status"], json.loads(r["artifacts"]))
        else:
            assert (row.status, row.code_hash) == (ProgramStatus.PENDING, r["hash"])
    return len(rows)


def test_a_run_served_the_corpus_finishes_and_resume_replays_it(tmp_path):
    problem = toy_problem(tmp_path / "toy")
    (problem / "problem.toml").write_text(
        (problem / "problem.toml").read_text() + "[search]\ntune_evals = 1\n"
    )
    replies = e2e_replies()
    seed, n = 7, len(replies)
    args = ["--seed", str(seed), "--parallel", "2", "--llm-parallel", "2", "--max-resamples", "1"]
    with ScriptedLLM(responder(replies, seed)) as srv:
        ref = evolve(
            *run_args(
                srv.base_url,
                tmp_path / "ref",
                *args,
                "--run-id",
                "ref",
                problem=problem,
                iterations=n,
            ),
            timeout=900,
        )
        assert ref.returncode == 0, ref.stderr[-3000:]
    again = evolve("resume", "ref", "--runs-dir", tmp_path / "ref", "--no-progress", timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]  # the tuner's replay included

    runs = tmp_path / "killed"
    with ScriptedLLM(responder(replies, seed)) as srv:
        proc = popen(
            *run_args(srv.base_url, runs, *args, "--run-id", "k", problem=problem, iterations=n)
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if (runs / "archive.db").exists() and len(_safe_outcomes(runs, "k")) >= n // 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        resumed = evolve("resume", "k", "--runs-dir", runs, "--no-progress", timeout=900)
        assert resumed.returncode == 0, resumed.stderr[-3000:]

    loaded = load_problem(problem)
    assert replayed(tmp_path / "ref", "ref", loaded) >= n and replayed(runs, "k", loaded) >= n
    ref_out, killed_out = outcomes(tmp_path / "ref", "ref"), outcomes(runs, "k")
    by_reply = {_sha(h.text): h.name for h in replies}
    served = {by_reply[k[0]]: v for k, v in ref_out.items() if k[0] in by_reply}
    assert len(served) == n  # every hostile reply was recorded: a program, or a clone asked again
    failed = {name for name, (status, _, _) in served.items() if status.startswith("invalid")}
    assert {"huge_program", "sr_thousands_of_blocks", "sr_growing", "sr_outside_blocks"} <= failed
    assert served["deep_sum_2950"][0] == "evaluated"  # and the tuner survived it
    # a reply applied to the same parent in both runs was decided alike (which of two equal
    # programs came first, and so which is the clone, is the order things finished in)
    both = [
        k
        for k in set(ref_out) & set(killed_out)
        if "clone" not in (ref_out[k][0], killed_out[k][0])
    ]
    assert len(both) >= 10
    for key in both:
        assert killed_out[key] == ref_out[key], by_reply.get(key[0])
    status = (
        sqlite3.connect(runs / "archive.db")
        .execute("SELECT status FROM runs WHERE run_id='k'")
        .fetchone()
    )
    assert status == ("finished",)


def _safe_outcomes(runs: Path, run_id: str) -> dict:
    try:
        return outcomes(runs, run_id)
    except sqlite3.OperationalError:  # the schema is not written yet
        return {}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


FUNCTION_BLOCK = "def f(x):\n    # EVOLVE-BLOCK-START\n    return x\n    # EVOLVE-BLOCK-END\n"


def test_the_breach_of_issue_37_in_a_function_block_runs_and_resumes(tmp_path):
    """The breach as found: a block inside a function is never tidied (module-level blocks
    only), so a ~2,950-term expression reached the tuner, whose ast.parse overflowed deeper
    in the controller's stack: `run` exited 1, and so did every `resume`."""
    problem = toy_problem(tmp_path / "toy")
    (problem / "seed.py").write_text(FUNCTION_BLOCK)
    (problem / "problem.toml").write_text(
        (problem / "problem.toml").read_text() + "[search]\ntune_evals = 2\n"
    )

    def body(expr: str) -> str:
        return (
            f"```python\n    # EVOLVE-BLOCK-START\n    return {expr}\n    # EVOLVE-BLOCK-END\n```\n"
        )

    script = [Reply(body("+".join(["1"] * 2950) + "+x"))] + [
        Reply(body(f"x + {k}.5")) for k in range(1, 4)
    ]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(script, then=Reply(body("x + 0.25"))) as srv:
        args = ["--parallel", "1", "--llm-parallel", "1", "--run-id", "b"]
        r = evolve(*run_args(srv.base_url, runs, *args, problem=problem, iterations=3))
        assert r.returncode == 0, r.stderr[-2000:]
        for _ in range(2):  # the tuner's state is replayed from the archive each time
            again = evolve("resume", "b", "--runs-dir", runs, "--no-progress")
            assert again.returncode == 0, again.stderr[-2000:]
    db = sqlite3.connect(runs / "archive.db")
    rows = dict(db.execute("SELECT iteration, status FROM programs WHERE run_id='b'").fetchall())
    tuned_from_deep = db.execute(
        "SELECT count(*) FROM programs WHERE parent_id='b:1' AND kind='tune'"
    ).fetchone()
    db.close()
    assert rows[1] == "ok" and tuned_from_deep == (0,)  # evaluated; its numbers are not tuned
