"""The search's decisions in real runs: the real CLI and the real `openai` client against a
scripted server whose replies depend on what each prompt asks."""

from __future__ import annotations

import signal
import sqlite3
import time

import pytest

from evolve.testing.cli_helpers import BINPACK, archive_json, block, evolve, popen, run_args
from evolve.testing.scripted_llm import ScriptedLLM, binpack_reply

BEST_FIT = binpack_reply("best_fit").content  # the seed again: a clone
WORST_FIT = binpack_reply("worst_fit").content
CRASH = block("def priority(item, bins):\n    return bins / (item - item)\n")
FIXED = block("def priority(item, bins):\n    return -(bins - item) ** 2\n")


def _text(request: dict) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"])


def _rows(runs_dir, sql: str) -> list[tuple]:
    db = sqlite3.connect(runs_dir / "archive.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def _run(srv: ScriptedLLM, tmp_path, *extra: str, iterations: int = 2):
    r = evolve(
        *run_args(
            srv.base_url,
            tmp_path,
            "--parallel",
            "1",
            "--llm-parallel",
            "1",
            *extra,
            iterations=iterations,
        )
    )
    assert r.returncode == 0, r.stderr
    return r


def test_a_clone_is_asked_again_hotter_and_stays_a_row(tmp_path):
    with ScriptedLLM.from_list([BEST_FIT, FIXED], then=FIXED) as srv:
        _run(srv, tmp_path, "--iterations", "1", "--temperatures", "0.5", "--max-resamples", "2")
        asked = srv.requests
    assert len(asked) == 2
    assert "repeated a program that was already tried" in _text(asked[1])
    assert asked[1]["temperature"] > asked[0]["temperature"] == 0.5
    calls = _rows(
        tmp_path,
        "SELECT iteration, purpose, outcome, completion_tokens FROM llm_calls ORDER BY call_id",
    )
    assert [c[:3] for c in calls] == [(1, "mutation", "rejected_duplicate"), (1, "resample", None)]
    assert calls[0][3] > 0  # its tokens are kept
    progs = archive_json(tmp_path, "runs")
    assert progs[0]["iterations_done"] == 1
    assert _rows(tmp_path, "SELECT status FROM programs WHERE iteration=1") == [("ok",)]


def test_clones_past_the_resample_limit_are_recorded_duplicate(tmp_path):
    with ScriptedLLM.from_list([BEST_FIT]) as srv:
        _run(srv, tmp_path, "--iterations", "1", "--max-resamples", "1")
        assert srv.counters["chat"] == 2
    assert _rows(tmp_path, "SELECT status FROM programs WHERE iteration=1") == [("duplicate",)]


def test_a_failed_child_is_repaired_once_with_its_error(tmp_path):
    others = iter([binpack_reply("best_fit_tiebreak").content, FIXED.replace("** 2", "** 4")])

    def responder(request):
        if "This code failed" in _text(request):
            return FIXED
        return CRASH if len(srv.requests) == 1 else next(others, WORST_FIT)

    with ScriptedLLM(responder) as srv:
        _run(srv, tmp_path, "--iterations", "5", "--repair-attempts", "1", "--max-resamples", "0")
        repair_prompts = [r for r in srv.requests if "This code failed" in _text(r)]
    assert len(repair_prompts) == 1 and "returned NaN or infinity" in _text(repair_prompts[0])
    rows = _rows(
        tmp_path, "SELECT iteration, kind, status, parent_id FROM programs ORDER BY iteration"
    )
    failed = rows[1]
    repaired = [r for r in rows if r[1] == "repair"]
    assert failed[2] == "invalid" and repaired and repaired[0][3].endswith(f":{failed[0]}")
    assert repaired[0][2] == "ok"
    purposes = _rows(tmp_path, "SELECT purpose FROM llm_calls ORDER BY call_id")
    assert ("repair",) in purposes


def test_max_calls_meta_notes_and_their_place_in_prompts(tmp_path):
    variants = ["worst_fit", "best_fit_tiebreak", "funsearch_weibull", "runtime_error"]
    state = {"n": 0}

    def responder(request):
        if "write short, concrete advice" in _text(request):
            return "- squaring the gap helped\n- <script>alert(1)</script> did nothing"
        state["n"] += 1
        return binpack_reply(variants[state["n"] % len(variants)])

    with ScriptedLLM(responder) as srv:
        _run(
            srv,
            tmp_path,
            "--iterations",
            "20",
            "--max-calls",
            "5",
            "--meta-interval",
            "2",
            "--repair-attempts",
            "0",
        )
        asked = srv.requests
    assert len(asked) == 5
    notes = _rows(tmp_path, "SELECT at_calls, text FROM meta_notes")
    assert notes and "squaring the gap helped" in notes[0][1]
    after = asked[[i for i, r in enumerate(asked) if "concrete advice" in _text(r)][0] + 1]
    assert "squaring the gap helped" in after["messages"][0]["content"]  # the system prompt
    run = archive_json(tmp_path, "runs")[0]
    assert run["status"] == "finished"


def test_funsearch_prompt_names_versions_and_the_reply_is_renamed_back(tmp_path):
    reply = "```python\ndef priority_v1(item, bins):\n    return -(bins - item) ** 3\n```\n"
    with ScriptedLLM.from_list([reply], then=WORST_FIT) as srv:
        _run(srv, tmp_path, "--iterations", "1", "--prompt-style", "funsearch")
        first = _text(srv.requests[0])
    assert "def priority_v0(" in first and "Write `priority_v1`" in first
    code = _rows(tmp_path, "SELECT code, status FROM programs WHERE iteration=1")[0]
    assert "def priority(item, bins):" in code[0] and "** 3" in code[0] and code[1] == "ok"


def test_stagnation_bursts_and_restarts_an_island(tmp_path):
    with ScriptedLLM.from_list([WORST_FIT], then=binpack_reply("best_fit_tiebreak")) as srv:
        _run(
            srv,
            tmp_path,
            "--iterations",
            "4",
            "--stagnation",
            "2",
            "--islands",
            "2",
            "--max-resamples",
            "0",
            "--burst-calls",
            "2",
        )
    decisions = _rows(tmp_path, "SELECT kind, detail_json FROM decisions")
    assert decisions and decisions[0][0] == "stagnation"
    burst = _rows(
        tmp_path, "SELECT decision FROM llm_calls WHERE decision LIKE 'stagnation burst%'"
    )
    assert burst


def test_search_settings_come_from_problem_toml_and_bad_ones_name_the_key(tmp_path):
    folder = tmp_path / "bp"
    import shutil

    shutil.copytree(BINPACK, folder, ignore=shutil.ignore_patterns("data"))
    shutil.copytree(BINPACK / "data", folder / "data")
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text() + "\n[search]\nmax_resamples = -1\n")
    r = evolve("check", folder)
    assert (
        r.returncode == 2 and "[search] max_resamples" in r.stderr and "Traceback" not in r.stderr
    )
    r = evolve("run", BINPACK, "--temperatures", "0.5,9")
    assert r.returncode == 2 and "--temperatures" in r.stderr and "Traceback" not in r.stderr


def test_resume_counts_the_rejected_calls_of_an_unfinished_iteration(tmp_path):
    """A kill after a clone was rejected: the resumed run asks that iteration again as a
    resample (told so, hotter), never repeating the rejected reply or a stored meta-note."""
    with ScriptedLLM.from_list([FIXED]) as srv:
        _run(srv, tmp_path, "--iterations", "1", "--temperatures", "0.5")
        port = srv.port
    run_id = archive_json(tmp_path, "runs")[0]["run_id"]
    from evolve.archive import Archive, LlmCall

    a = Archive(tmp_path)
    call = a.insert_llm_call(
        LlmCall(
            run_id=run_id,
            iteration=2,
            island=2,
            parent_id=f"{run_id}:0",
            edit_format="block",
            model="scripted",
            prompt=[],
            reply=BEST_FIT,
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=0.0,
            latency_s=0.1,
            purpose="mutation",
            temperature=0.5,
            decision="the only model",
        )
    )
    a.reject_call(call, "rejected_duplicate")
    a.close()
    with ScriptedLLM.from_list([WORST_FIT], port=port) as srv:  # the run's stored endpoint
        r = evolve(
            "resume", run_id, "--iterations", "2", "--runs-dir", str(tmp_path), "--no-progress"
        )
        assert r.returncode == 0, r.stderr
        asked = srv.requests
    assert len(asked) == 1 and "repeated a program that was already tried" in _text(asked[0])
    assert asked[0]["temperature"] > 0.5
    rows = _rows(
        tmp_path,
        "SELECT iteration, purpose, outcome FROM llm_calls WHERE iteration=2 ORDER BY call_id",
    )
    assert rows == [(2, "mutation", "rejected_duplicate"), (2, "resample", None)]


NEAR_MISS = block(  # the right shape with a threshold too small: it scores below best fit
    "def priority(item, bins):\n    gap = bins - item\n"
    "    return np.where((gap > 0) & (gap < 10), -gap - 10.0, -gap)\n"
)


def test_a_new_programs_numbers_are_tuned_without_calls(tmp_path):
    with ScriptedLLM.from_list([NEAR_MISS], then=BEST_FIT) as srv:
        # Two calls (the near miss, then a clone); the tuned children come after, call-free.
        _run(
            srv,
            tmp_path,
            "--iterations",
            "30",
            "--max-calls",
            "2",
            "--tune-evals",
            "12",
            "--max-resamples",
            "0",
            "--stagnation",
            "0",
            "--data-seed",
            "2023",
        )
        asked = len(srv.requests)
    rows = _rows(
        tmp_path,
        "SELECT program_id, kind, parent_id, llm_call_id, score, diff FROM programs"
        " ORDER BY iteration",
    )
    seed, near = rows[0], rows[1]
    tuned = [r for r in rows if r[1] == "tune"]
    assert near[1] == "mutation" and near[4] < seed[4]  # the model's child: worse than best fit
    assert len(tuned) == 12 and asked == 2  # every tuned child came without a call
    assert all(r[3] is None for r in tuned)
    assert (
        tuned[0][2] == near[0] and "(gap < 20), -gap - 10.0" in tuned[0][5]
    )  # first number doubled
    by_id = {r[0]: r for r in rows}
    climbed = [r for r in tuned if r[4] > by_id[r[2]][4]]
    assert climbed and any(r[2] == climbed[0][0] for r in tuned)  # a better child is tuned in turn
    best = max(rows, key=lambda r: r[4] if r[4] is not None else -1e9)
    assert best[1] == "tune" and best[4] > seed[4]  # tuning found what the call alone missed
    assert _rows(tmp_path, "SELECT COUNT(*) FROM llm_calls")[0][0] == asked


def test_tuning_off_in_problem_toml_asks_the_model_every_iteration(tmp_path):
    import shutil

    folder = tmp_path / "bp"
    shutil.copytree(BINPACK, folder)
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text() + "\n[search]\ntune_evals = 0\n")
    with ScriptedLLM.from_list([NEAR_MISS], then=WORST_FIT) as srv:
        r = evolve(
            *run_args(
                srv.base_url,
                tmp_path,
                "--parallel",
                "1",
                "--llm-parallel",
                "1",
                "--max-resamples",
                "0",
                "--data-seed",
                "2023",
                problem=folder,
                iterations=3,
            )
        )
        assert r.returncode == 0, r.stderr
        assert len(srv.requests) == 3
    assert _rows(tmp_path, "SELECT COUNT(*) FROM programs WHERE kind='tune'") == [(0,)]
    toml.write_text(toml.read_text().replace("tune_evals = 0", "tune_evals = -2"))
    r = evolve("check", folder)
    assert r.returncode == 2 and "[search] tune_evals" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.timeout(900)  # three runs of eight tuned children and their held-out rescoring
def test_tuning_resumes_where_it_stopped(tmp_path):
    """Tuned children take no iteration: one iteration asks once and tunes its child. A run
    interrupted mid-tuning goes on with the variants not yet evaluated: the same tuned
    programs as a run never stopped, none evaluated twice, no call made again."""
    args = (
        "--iterations",
        "1",
        "--tune-evals",
        "8",
        "--max-resamples",
        "0",
        "--stagnation",
        "0",
        "--run-id",
        "t",
        "--data-seed",
        "2023",
    )
    sql = "SELECT code_hash FROM programs WHERE kind='tune'"
    with ScriptedLLM.from_list([NEAR_MISS]) as srv:
        _run(srv, tmp_path / "whole", *args)
        cut = tmp_path / "cut"
        proc = popen(*run_args(srv.base_url, cut, "--parallel", "1", "--llm-parallel", "1", *args))
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                tuned = _rows(cut, sql + " AND status != 'pending'")
            except sqlite3.OperationalError:  # the archive is being created
                continue
            if tuned:
                proc.send_signal(signal.SIGINT)  # one tuned child done, seven to come
                break
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130 and "evolve resume t" in err, err
        assert archive_json(cut, "runs")[0]["status"] == "stopped"
        resumed = evolve("resume", "t", "--runs-dir", str(cut), "--no-progress")
        assert resumed.returncode == 0, resumed.stderr
        assert srv.counters["chat"] == 2  # one call per run; the resume asked nothing
    whole, after = _rows(tmp_path / "whole", sql), _rows(cut, sql)
    assert len(after) == len(set(after)) == 8
    assert sorted(after) == sorted(whole)
    run = archive_json(cut, "runs")[0]
    assert (run["status"], run["iterations_done"]) == ("finished", 1)
