"""Crates a Rust problem declares are fetched on the trusted side (evolve/problem/crates.py), so its
folder scores on a machine whose cargo cache is empty, and the sandbox still builds offline.

No network: crates.io is replaced, in the CARGO_HOME the test gives evolve, by a directory
source the test writes (one crate, `tinydep`). The fetch runs real `cargo vendor` through
that replacement into an empty user cache; the sandbox then builds with cargo offline and
its own empty CARGO_HOME. Without the fetch, the same evaluation fails as it did before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from evaluators.inside.caches import CRATES_ENV, prepare_cargo
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, Limits, Status
from evolve.problem.crates import CrateError, crates_dir, manifests
from evolve.testing.cli_helpers import archive_json, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM
from tests.support.docker_support import docker_image  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(shutil.which("cargo") is None, reason="no cargo")

PROBLEM_TOML = """[problem]
name = "crate_probe"
description = "A Rust program that links the tinydep crate: scores 1.0 when it builds and runs."
entry = "main.rs"
metric = "answer"
direction = "maximize"

[evaluation]
timeout_s = 120
memory_mb = 2048
tools = ["cargo", "rustc"]
"""
EVALUATOR = '''"""Builds the candidate against build/Cargo.toml (which names tinydep), offline."""
import os, shutil, subprocess, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def evaluate(program_path, split):
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("Cargo.toml", "Cargo.lock"):
            shutil.copy(os.path.join(HERE, "build", name), tmp)
        os.mkdir(os.path.join(tmp, "src"))
        shutil.copy(program_path, os.path.join(tmp, "src", "main.rs"))
        build = subprocess.run(["cargo", "build", "--offline", "--quiet"], cwd=tmp,
                               capture_output=True, text=True, timeout=100)
        if build.returncode != 0:
            return {"valid": False, "artifacts": {"error": "cargo build failed",
                                                  "stderr": build.stderr[-2000:]}}
        run = subprocess.run([os.path.join(tmp, "target", "debug", "probe")],
                             capture_output=True, text=True, timeout=10)
    answer, planted = run.stdout.split()
    return {"score": int(answer) / 42, "metrics": {"planted": float(planted == "planted")}}
'''
# the candidate tries to write into the fetched crates: it must not be able to
SEED = """fn main() {
    let planted = std::env::var("EVOLVE_CRATES_DIR")
        .map(|d| std::fs::write(format!("{d}/tinydep/src/planted.rs"), "//").is_ok())
        .unwrap_or(false);
    // EVOLVE-BLOCK-START
    let answer = tinydep::answer();
    // EVOLVE-BLOCK-END
    println!("{} {}", answer, if planted { "planted" } else { "denied" });
}
"""
MANIFEST = '[package]\nname = "probe"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'


@pytest.fixture
def world(tmp_path: Path) -> dict:
    """A one-crate registry, the CARGO_HOME that replaces crates.io with it, an empty HOME
    (no cargo cache, no evolve cache) and a problem whose build/Cargo.toml names the crate."""
    registry = tmp_path / "registry" / "tinydep"
    (registry / "src").mkdir(parents=True)
    (registry / "Cargo.toml").write_text(
        '[package]\nname = "tinydep"\nversion = "0.1.3"\nedition = "2021"\n'
    )
    (registry / "src" / "lib.rs").write_text("pub fn answer() -> u32 { 42 }\n")
    (registry / ".cargo-checksum.json").write_text(json.dumps({"files": {}, "package": "ab" * 32}))
    cargo_home = tmp_path / "cargo-home"
    cargo_home.mkdir()
    (cargo_home / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "fixture"\n\n'
        f'[source.fixture]\ndirectory = "{registry.parent}"\n'
    )
    problem = tmp_path / "problem"
    (problem / "build").mkdir(parents=True)
    (problem / "problem.toml").write_text(PROBLEM_TOML)
    (problem / "evaluator.py").write_text(EVALUATOR)
    (problem / "main.rs").write_text(SEED)
    (problem / "build" / "Cargo.toml").write_text(MANIFEST + 'tinydep = "0.1"\n')
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "CARGO_HOME": str(cargo_home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        # the toolchain is installed; only the crates are missing
        "RUSTUP_HOME": os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup"),
    }
    scratch = tmp_path / "lock"  # the manifest has no sources: cargo wants a target to lock
    (scratch / "src").mkdir(parents=True)
    (scratch / "src" / "lib.rs").touch()
    shutil.copy(problem / "build" / "Cargo.toml", scratch)
    lock = subprocess.run(
        ["cargo", "generate-lockfile", "--offline"],
        cwd=scratch,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert lock.returncode == 0, lock.stderr
    shutil.copy(scratch / "Cargo.lock", problem / "build")
    return {"problem": problem, "env": env, "home": home}


def _evaluate(problem: Path, crates: str | None) -> tuple[Status, dict, dict]:
    sandbox = LocalSandbox()
    try:
        req = EvalRequest(
            problem_dir=str(problem),
            program_code=SEED,
            program_name="main.rs",
            split="train",
            limits=Limits(timeout_s=120, memory_mb=2048),
            tools=("cargo", "rustc"),
            crates=crates,
        )
        res = sandbox.evaluate(req)
    finally:
        sandbox.close()
    return res.status, res.metrics | {"score": res.score}, res.artifacts


@pytest.mark.timeout(300)
def test_fetched_crates_build_offline_in_the_sandbox_where_none_did_before(world, monkeypatch):
    for k, v in world["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("EVOLVE_CACHE_DIR", raising=False)
    problem = world["problem"]
    # before: no fetch step, and cargo offline in the sandbox finds no tinydep
    status, _, artifacts = _evaluate(problem, None)
    assert status != Status.OK and "no matching package named `tinydep`" in artifacts["stderr"]
    crates = crates_dir(problem, ("cargo", "rustc"))
    assert crates is not None and crates.startswith(str(world["home"] / ".cache" / "evolve"))
    assert (Path(crates) / "tinydep" / "src" / "lib.rs").is_file()
    assert crates_dir(problem, ("cargo", "rustc")) == crates  # once per lockfile
    status, metrics, artifacts = _evaluate(problem, crates)
    assert status == Status.OK and metrics["score"] == 1.0, artifacts
    assert metrics["planted"] == 0.0 and not (Path(crates) / "tinydep/src/planted.rs").exists()
    assert not (problem / "build" / "target").exists()  # nothing written into the problem


def test_a_manifest_without_lockfile_is_fetched_from_a_copy(world, monkeypatch):
    for k, v in world["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("EVOLVE_CACHE_DIR", raising=False)
    problem = world["problem"]
    (problem / "build" / "Cargo.lock").unlink()
    found = manifests(problem)
    assert found.paths == ("build/Cargo.toml",) and not found.locked()
    crates = crates_dir(problem, ("cargo", "rustc"))
    assert crates is not None and (Path(crates) / "tinydep" / "Cargo.toml").is_file()
    assert not (problem / "build" / "Cargo.lock").exists()  # cargo wrote its lock elsewhere
    assert crates_dir(problem, ("g++",)) is None  # no cargo among the tools: nothing fetched


def test_nothing_is_fetched_for_path_dependencies_or_a_folder_that_vendors(world, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", world["env"]["XDG_CACHE_HOME"])
    problem = world["problem"]
    (problem / "build" / "Cargo.toml").write_text(MANIFEST + 'near = { path = "../near" }\n')
    assert manifests(problem).paths == () and crates_dir(problem, ("cargo",)) is None
    (problem / "build" / "Cargo.toml").write_text(MANIFEST + 'tinydep = "0.1"\n')
    (problem / ".cargo").mkdir()
    (problem / ".cargo" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "vendored-sources"\n\n'
        '[source.vendored-sources]\ndirectory = "vendor"\n'
    )
    assert crates_dir(problem, ("cargo",)) is None
    assert not (world["home"] / ".cache").exists()
    (problem / ".cargo" / "config.toml").write_text("[source.crates-io\n")
    with pytest.raises(CrateError, match=r"\.cargo/config\.toml: not a readable cargo config"):
        crates_dir(problem, ("cargo",))


def test_the_fetched_crates_follow_a_problem_config_that_replaces_no_source(tmp_path, monkeypatch):
    """A .cargo/config.toml with build settings only: kept, and crates.io is the fetched folder."""
    (tmp_path / ".cargo").mkdir()
    (tmp_path / ".cargo" / "config.toml").write_text('[build]\nrustflags = ["-Copt-level=2"]\n')
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(CRATES_ENV, "/crates")
    prepare_cargo(str(tmp_path))
    text = (tmp_path / "home" / "config.toml").read_text()
    assert text.startswith("[build]") and tomllib.loads(text)["source"] == {
        "crates-io": {"replace-with": "evolve-fetched"},
        "evolve-fetched": {"directory": "/crates"},
    }


def test_a_manifest_that_is_no_toml_is_named_in_one_line(world):
    bad = world["problem"] / "build" / "Cargo.toml"
    bad.write_text("[package\n")
    with pytest.raises(CrateError, match=rf"^{bad}: not a readable Cargo.toml \("):
        manifests(world["problem"])


@pytest.mark.timeout(300)
def test_eval_scores_on_an_empty_home_and_names_a_crate_it_cannot_fetch(world, tmp_path):
    problem, env = world["problem"], world["env"]
    r = evolve("eval", problem, problem / "main.rs", "--json", "--sandbox", "local", extra_env=env)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, r.stdout + r.stderr
    out = json.loads(lines[-1])
    assert out["status"] == "ok" and out["score"] == 1.0, out
    assert CRATES_ENV not in r.stdout  # the sandbox's own variable, not the user's business
    # a crate the registry lacks: one line naming the manifest and cargo's reason, exit 2
    (problem / "build" / "Cargo.toml").write_text(MANIFEST + 'tinydep = "0.1"\nmissing = "1"\n')
    (problem / "build" / "Cargo.lock").unlink()
    r = evolve("eval", problem, problem / "main.rs", "--json", "--sandbox", "local", extra_env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.strip().splitlines()
    assert f"{problem / 'build' / 'Cargo.toml'}: cargo vendor could not fetch its crates" in line
    assert "no matching package named `missing` found" in line
    runs = tmp_path / "runs"
    with ScriptedLLM() as llm:
        for args in (
            ["check", problem, "--sandbox", "local"],
            run_args(llm.base_url, runs, "--sandbox", "local", problem=problem),
        ):
            r = evolve(*args, extra_env=env)
            assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
            assert r.stderr.strip().splitlines()[-1].endswith(line.split(": error: ", 1)[1])
            assert "seed on" not in r.stdout  # nothing evaluated: no candidate is blamed
    assert archive_json(runs, "runs") == []  # refused before the run was written


@pytest.mark.timeout(900)  # the first call layers the toolchain on the image (~600 MB)
def test_the_docker_sandbox_mounts_the_fetched_crates_read_only(world, docker_image):  # noqa: F811
    problem, env = world["problem"], world["env"]
    r = evolve(
        "eval", problem, problem / "main.rs", "--json", "--sandbox", "docker",
        extra_env=env, timeout=880,
    )  # fmt: skip
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, r.stdout + r.stderr
    out = json.loads(lines[-1])
    assert out["status"] == "ok" and out["score"] == 1.0 and out["metrics"]["planted"] == 0.0, out
