"""Programs of several files in other languages, laid out as Python trees are: a C++ program
whose main.cpp includes the evolving policy.hpp beside it, and a Rust crate (Cargo.toml,
src/main.rs, src/sched.rs) that cargo builds where the tree lies; each scored by
`evolve eval PROBLEM DIR` on the local sandbox (C++ with bubblewrap and without namespaces,
and on Docker).
Skipped only where the machine lacks the tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evolve.testing.cli_helpers import evolve
from tests.support.docker_support import docker_image  # noqa: F401  (a session fixture)

FIXTURES = Path(__file__).parent / "fixtures"
CPP = FIXTURES / "cpp_knapsack_tree"  # main.cpp (fixed) + policy.hpp (evolving)
RUST = FIXTURES / "rust_sched_tree"  # Cargo.toml, src/main.rs (fixed) + src/sched.rs
CPP_SEED_SCORE = 0.9096163928782744  # value first: as cpp_knapsack's one-file seed scores
CPP_DENSITY_SCORE = 0.9878571587882842  # value / weight first
RUST_SEED_SCORE = 0.5699338060665089  # the jobs as they came
ISOLATION = {"bubblewrap": {}, "fallback": {"EVOLVE_LOCAL_ISOLATION": "off"}}

need_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ (apt-get install g++)")
need_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="no cargo (rustup)")


def _eval(problem: Path, program: Path, how: str) -> tuple[int, dict | None, str]:
    r = evolve(
        "eval",
        problem,
        program,
        "--json",
        "--sandbox",
        "local",
        timeout=280,
        extra_env=ISOLATION[how],
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    return r.returncode, json.loads(lines[-1]) if lines else None, r.stderr


def _program(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder holding the evolving files given (the fixed ones are the seed's)."""
    folder = tmp_path / "program"
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@need_gpp
@pytest.mark.parametrize("how", ISOLATION)
def test_cpp_with_a_header(tmp_path: Path, how: str) -> None:
    header = (CPP / "policy.hpp").read_text()
    rc, seed, err = _eval(CPP, _program(tmp_path / "seed", {"policy.hpp": header}), how)
    assert rc == 0 and seed is not None, err[-2000:]
    assert seed["status"] == "ok" and seed["score"] == pytest.approx(CPP_SEED_SCORE)
    density = header.replace(
        "return static_cast<double>(value);",
        "return static_cast<double>(value) / static_cast<double>(weight);",
    )
    rc, out, err = _eval(CPP, _program(tmp_path / "density", {"policy.hpp": density}), how)
    assert rc == 0 and out is not None and out["score"] == pytest.approx(CPP_DENSITY_SCORE), err
    broken = header.replace("return static_cast", "retrun static_cast")
    rc, out, err = _eval(CPP, _program(tmp_path / "broken", {"policy.hpp": broken}), how)
    assert rc == 1 and out is not None and out["status"] == "invalid"
    assert (
        "compilation failed" in out["artifacts"]["error"]
        and "policy.hpp" in out["artifacts"]["stderr"]
    )


@need_cargo
# bubblewrap only: as root, the fallback's slot uid cannot reach a rustup install under a 0700
# /root (the same for a one-file Rust problem; g++ under /usr it reaches)
@pytest.mark.parametrize("how", ["bubblewrap"])
def test_rust_crate_of_two_modules(tmp_path: Path, how: str) -> None:
    sched = (RUST / "src" / "sched.rs").read_text()
    rc, seed, err = _eval(RUST, _program(tmp_path / "seed", {"src/sched.rs": sched}), how)
    assert rc == 0 and seed is not None, err[-2000:]
    assert seed["status"] == "ok" and seed["score"] == pytest.approx(RUST_SEED_SCORE)
    smith = sched.replace(
        "    (0..jobs.len()).collect()\n",
        "    let mut o: Vec<usize> = (0..jobs.len()).collect();\n"
        "    o.sort_by(|&a, &b| (jobs[a].length * jobs[b].weight).cmp(&(jobs[b].length * jobs[a].weight)));\n"
        "    o\n",
    )
    rc, out, err = _eval(RUST, _program(tmp_path / "smith", {"src/sched.rs": smith}), how)
    assert rc == 0 and out is not None and out["score"] == pytest.approx(1.0), (out, err[-2000:])
    broken = sched.replace("pub fn order", "pub fn ordre")  # main.rs calls sched::order
    rc, out, err = _eval(RUST, _program(tmp_path / "broken", {"src/sched.rs": broken}), how)
    assert rc == 1 and out is not None and "cargo build failed" in out["artifacts"]["error"]
    assert "sched::order" in out["artifacts"]["stderr"] or "order" in out["artifacts"]["stderr"]


@need_gpp
@pytest.mark.timeout(900)  # the first call builds the layer: g++ installed in the image
def test_cpp_with_a_header_on_the_docker_sandbox(tmp_path: Path, docker_image) -> None:  # noqa: F811
    header = (CPP / "policy.hpp").read_text()
    r = evolve(
        "eval",
        CPP,
        _program(tmp_path, {"policy.hpp": header}),
        "--json",
        "--sandbox",
        "docker",
        timeout=580,
    )
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, r.stdout + r.stderr
    out = json.loads(lines[-1])
    assert out["status"] == "ok" and out["score"] == pytest.approx(CPP_SEED_SCORE)
