"""Every script in bench/ runs at its smallest size, so a benchmark that stopped working
fails the suite (bench/controller_overhead.py once failed at main for months unnoticed).

Each script runs as a user runs it (`python bench/NAME.py ...`, this checkout's packages
first), its results written to a scratch folder (EVOLVE_BENCH_RESULTS), never over a
measured result. A script that needs what a test machine lacks (a peer's venv, a fetched
repository, the local model) is listed with the reason and runs the offline part it has.
A script missing from the table fails test_every_bench_script_is_in_the_table.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evolve.testing.scripted_llm import ScriptedLLM, binpack_replies

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


@dataclass(frozen=True)
class Smoke:
    """One script's smallest run. Placeholders in args: {tmp} a scratch folder, {llm} the
    base URL of a scripted server answering binpack's canned edits, {runs} a runs folder
    of a small synthetic archive (bench/make_archive.py), {python} this interpreter."""

    args: tuple[str, ...]
    expect: str  # a regex its output must match: its summary or result line
    result: str | None = None  # the JSON it writes under the results folder
    needs: str | None = None  # the tier it needs: docker, ray or browser
    offline: str | None = None  # why only this part runs here
    broken: str | None = None  # known broken: a strict xfail, so a fix must remove it
    timeout: float = 300  # a hang guard, not a measure: a loaded machine is slow


NO_PEERS = "needs a peer's venv from PyPI and the peer's fetched repository"
NO_MODEL = "needs the bundled local model (llama.cpp), not run in tests"

SCRIPTS: dict[str, Smoke] = {
    "agent_sessions.py": Smoke(
        ("{runs}",), r"no agent sessions"
    ),  # with sessions: test_agent_visible
    "baselines.py": Smoke(
        ("--problems", "eplb", "dag_modular"),  # dag_modular: a program of several files
        r"\| dag_modular/baselines/heft \| test \| ok",
        "baselines",
    ),
    "binpack_hints.py": Smoke(
        ("--splits", "train", "--rules", "1"), r"\| best fit \(seed\) \|", "binpack_hints"
    ),
    "code_shape.py": Smoke((".", "--largest", "3"), r"(?i)cycle"),
    "controller_overhead.py": Smoke(
        ("--skip-openevolve", "--repeats", "1", "--sizes", "4", "--iterations", "20"),
        r"evolve, sandbox included",
        "controller_overhead",
        offline="OpenEvolve's side needs openevolve==0.4.0 from PyPI: --skip-openevolve",
    ),
    "docker_overhead.py": Smoke(
        ("--n", "2"),
        r"warm pool / local",
        "docker_overhead",
        "docker",
        broken="its exec and run rows write /out/RESULT.json, which the confined harness may "
        "no longer write (PermissionError): broken at main",
    ),
    "endpoint_mistakes.py": Smoke(("--repeats", "1"), r"refused", "endpoint_mistakes"),
    "eval_budget.py": Smoke(("--n", "1", "--problems", "binpack"), r"binpack", "eval_budget"),
    "gepa_examples.py": Smoke(
        (str(ROOT / "tests" / "fixtures" / "gepa"), "--timeout", "120"),
        r"guess",
        offline="GEPA's own examples are fetched; runs on the tests' GEPA scripts instead",
    ),
    "hostile_replies.py": Smoke(("--size", "20000", "--repeat", "3", "--top", "3"), r"normal"),
    "kill_trials.py": Smoke(
        ("--trials", "1", "--iterations", "3"), r"orphaned|lost", "kill_trials", timeout=240
    ),
    "llm_faults.py": Smoke(("--iterations", "2", "--only", "none"), r"\bnone\b", "llm_faults"),
    "local_model.py": Smoke(("--help",), r"--skip-openevolve", offline=NO_MODEL),
    "make_archive.py": Smoke(("{tmp}/runs", "--runs", "2", "--programs", "20"), r"MB in"),
    "metric_bounds.py": Smoke(
        ("--programs", "3", "--echo", "2000", "--repeat", "1"), r"written to", "metric_bounds"
    ),
    "newcomer.py": Smoke(
        ("--python", "{python}", "--work", "{tmp}/newcomer", "--iterations", "2"),
        r'"ok": true',
        "newcomer",
        offline="its install step needs PyPI: --python runs the clone on this interpreter",
    ),
    "openevolve_compat.py": Smoke(("--help",), r"--openevolve-venv", offline=NO_PEERS),
    "peer_folders.py": Smoke(("--help",), r"--openevolve-venv", offline=NO_PEERS),
    "prompt_probe.py": Smoke(
        (
            "--base-url",
            "{llm}",
            "--model",
            "scripted",
            "--replies",
            "1",
            "--variants",
            "short@0.4",
            "--work",
            "{tmp}/probe",
        ),
        r"\| short@0.4 \| 1 \|",
        "prompt_probe",
        offline="the local model is replaced by the scripted server",
    ),
    "ray_throughput.py": Smoke(
        ("--iterations", "2", "--sleep", "0.1", "--repeat", "2"),
        r"dispatch",
        "ray_throughput",
        "ray",
        timeout=300,
    ),
    "remote_policy.py": Smoke(
        ("--n", "1", "--problems", "binpack"), r"round trip", "remote_policy"
    ),
    "sandbox_overhead.py": Smoke(("--n", "3"), r"in-process evaluate", "sandbox_overhead"),
    "search_ablation.py": Smoke(("--help",), r"--calls", offline=NO_MODEL),
    "search_race.py": Smoke(("--help",), r"--frameworks", offline=NO_PEERS + "; " + NO_MODEL),
    "search_yield.py": Smoke(("{runs}",), r"run_id"),
    "shinka_compat.py": Smoke(("--help",), r"--shinka-venv", offline=NO_PEERS),
    "skydiscover_folders.py": Smoke(
        ("--help",), r"--skydiscover", offline="needs a fetched SkyDiscover checkout"
    ),
    "tree_backends.py": Smoke(
        ("--backends", "local", "--iterations", "1", "--problems", "scaffold"),
        r"scaffold +local +finished",
        "tree_backends",
        offline="Docker and Ray rows need their tiers: local, the smallest problem only",
        timeout=300,
    ),
    "tree_storage.py": Smoke(("--programs", "20"), r"content", "tree_storage"),
    "tree_yield.py": Smoke(
        ("--api-base", "{llm}", "--model", "scripted", "--calls", "1", "--seeds", "1"),
        r"dag_modular|summary|calls",
        "tree_yield",
        offline="the local model is replaced by the scripted server",
    ),
    "tune_climb.py": Smoke(("--budget", "1", "--rule=-2.0 * gap"), r"seed", "tune_climb"),
    "tune_twins.py": Smoke(("{runs}",), r"skipped|run", "tune_twins"),
    "ui_render.py": Smoke(
        ("--programs", "40", "--runs", "2", "--repeat", "1"), r"report of", "ui_render", "browser"
    ),
}
# Imported or run by the scripts above, not benchmarks of their own.
HELPERS = {
    "harness.py": "machine information and result writing",
    "overhead_common.py": "controller_overhead.py's shared pieces",
    "overhead_ours.py": "run by controller_overhead.py",
    "overhead_openevolve.py": "run by controller_overhead.py in OpenEvolve's venv",
    "peer_common.py": "openevolve_compat.py's and shinka_compat.py's shared pieces",
}


def test_every_bench_script_is_in_the_table():
    on_disk = {p.name for p in BENCH.glob("*.py")}
    assert sorted(on_disk - SCRIPTS.keys() - HELPERS.keys()) == [], "add it to SCRIPTS"
    assert sorted((SCRIPTS.keys() | HELPERS.keys()) - on_disk) == [], "a script was removed"


def test_every_bench_script_is_in_the_readme_index():
    """bench/README.md opens with one table row per script: what it measures, how long."""
    readme = (BENCH / "README.md").read_text()
    rows = set(re.findall(r"^\| `([\w.]+\.py)` \|", readme, flags=re.M))
    assert sorted(SCRIPTS.keys() - rows) == [], "add a row to bench/README.md's index"


def test_a_script_run_only_in_part_says_why():
    partial = [n for n, s in SCRIPTS.items() if "--help" in s.args and not s.offline]
    assert partial == []


@pytest.fixture(scope="module")
def bench_smoke(tmp_path_factory):
    """What the scripts' placeholders name: a scripted server, and a small archive made on
    first use by bench/make_archive.py."""
    llm = ScriptedLLM.from_list(binpack_replies())
    url = llm.start()
    scratch = tmp_path_factory.mktemp("bench-archive")

    def runs() -> str:
        folder = scratch / "runs"
        if not (folder / "archive.db").is_file():
            made = _run(BENCH / "make_archive.py", [str(folder), "--runs", "2", "--programs", "20"],
                        scratch, 120)  # fmt: skip
            assert made.returncode == 0, f"make_archive.py: {made.stdout[-3000:]}"
        return str(folder)

    try:
        yield {"llm": url, "runs": runs}
    finally:
        llm.stop()


def _run(script: Path, args: list[str], tmp: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVOLVE_"))}
    env.update(PYTHONPATH=str(ROOT), EVOLVE_BENCH_RESULTS=str(tmp / "results"),
               OPENAI_API_KEY="bench-smoke", COLUMNS="160")  # fmt: skip
    return subprocess.run([sys.executable, str(script), *args], cwd=ROOT, env=env, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip


def _param(name: str):
    smoke = SCRIPTS[name]
    marks = [getattr(pytest.mark, smoke.needs)] if smoke.needs else []
    if smoke.broken:
        marks.append(pytest.mark.xfail(reason=smoke.broken, strict=True))
    return pytest.param(name, id=name[:-3], marks=marks)


@pytest.mark.parametrize("name", [_param(n) for n in sorted(SCRIPTS)])
def test_bench_script_runs_at_its_smallest_size(name, bench_smoke, tmp_path):
    smoke = SCRIPTS[name]
    names = {"tmp": tmp_path, "llm": bench_smoke["llm"], "python": sys.executable}
    if any("{runs}" in a for a in smoke.args):
        names["runs"] = bench_smoke["runs"]()
    args = [a.format(**names) for a in smoke.args]
    proc = _run(BENCH / name, args, tmp_path, smoke.timeout)
    out = proc.stdout
    assert proc.returncode == 0, f"{name} {' '.join(args)}: exit {proc.returncode}\n{out[-4000:]}"
    assert re.search(smoke.expect, out), f"{name}: no {smoke.expect!r} in\n{out[-4000:]}"
    if smoke.result is not None:
        written = tmp_path / "results" / f"{smoke.result}.json"
        assert written.is_file(), f"{name}: no {written.name}\n{out[-4000:]}"
        assert json.loads(written.read_text())  # a whole JSON document, not empty
