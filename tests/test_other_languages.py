"""Evolving programs in languages other than Python: OpenEvolve's rust_adaptive_sort unchanged
(its crates from the offline cache the fixture vendored) and a C++ problem of our own, each
checked, evaluated and evolved for 3 scripted iterations on the local sandbox; markers in
`//` comments, duplicates found by a normal form without the language's comments, a tool
the machine lacks named in one line by `check`.

Compiling is slow on a small machine (cargo builds rand and libc each time: ~12 s on 2
cores), so the Rust tests are marked slow; the C++ ones take a few seconds.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from evaluators.inside.caches import prepare_cargo
from evaluators.inside.languages import by_name, by_suffix
from evaluators.inside.markers import find_blocks
from evaluators.toolchain import host_env, resolve
from evolve.edits import apply_reply, normalized_hash
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import ROOT, evolve, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.support.docker_support import docker_image  # noqa: F401  (a fixture)

FIXTURES = ROOT / "tests" / "fixtures"
RUST = FIXTURES / "openevolve_rust_adaptive_sort"
CPP = FIXTURES / "cpp_knapsack"
CPP_SEED_SCORE = 0.9096163928782744  # value-first greedy against the fractional bound
CPP_DENSITY_SCORE = 0.9878571587882842  # value / weight first

need_gpp = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ (apt-get install g++)")


def _cargo_version() -> tuple[int, ...]:
    """(1, 95) for cargo 1.95.0; () without cargo."""
    if shutil.which("cargo") is None:
        return ()
    out = subprocess.run(["cargo", "--version"], capture_output=True, text=True).stdout.split()
    return tuple(int(x) for x in out[1].split(".")[:2]) if len(out) > 1 else ()


# the example's crate is of edition 2024: cargo 1.85 or later (Debian 12's is 1.65)
need_cargo = pytest.mark.skipif(
    _cargo_version() < (1, 85), reason="no cargo >= 1.85 (rustup; Debian 12's is too old)"
)

CPP_DIFF = """Order by value density.

<<<<<<< SEARCH
    return static_cast<double>(value);
=======
    return static_cast<double>(value) / static_cast<double>(weight);
>>>>>>> REPLACE
"""
CPP_BROKEN_BLOCK = """```cpp
// EVOLVE-BLOCK-START
double priority(long value, long weight) {
    return value / weight  // no semicolon: g++ says so
}
// EVOLVE-BLOCK-END
```
"""
RUST_DIFF = """Use the standard library's pattern-defeating quicksort.

<<<<<<< SEARCH
    // Use quicksort as the base implementation
    quicksort(arr, 0, arr.len() - 1);
=======
    arr.sort_unstable();
>>>>>>> REPLACE
"""
# the same program as RUST_DIFF's, but for a comment and blank space: a duplicate
RUST_SAME_AGAIN = """<<<<<<< SEARCH
    // Use quicksort as the base implementation
    quicksort(arr, 0, arr.len() - 1);
=======
    /* pdqsort */   arr.sort_unstable();   // the same call
>>>>>>> REPLACE
"""


def _programs(runs_dir: Path) -> list[dict]:
    db = sqlite3.connect(runs_dir / "archive.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM programs ORDER BY iteration")]
    db.close()
    return rows


def _eval(folder: Path, program: Path) -> dict:
    r = evolve("eval", folder, program, "--json", "--sandbox", "local", timeout=280)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, r.stdout + r.stderr
    return json.loads(lines[-1])


def test_markers_in_each_languages_comments():
    rust = (RUST / "initial_program.rs").read_text()
    [block] = find_blocks(rust)
    assert "pub fn adaptive_sort" in block.body and "pub fn run_benchmark" not in block.body
    sql = "SELECT 1;\n-- EVOLVE-BLOCK-START\nSELECT 2;\n-- EVOLVE-BLOCK-END\n"
    assert [b.body for b in find_blocks(sql)] == ["SELECT 2;\n"]
    assert by_suffix(".rs").comment == "//" and by_suffix(".lua").comment == "--"
    assert by_name("C++") == by_suffix(".cpp") and by_name("rust").tools == ("cargo", "rustc")
    fortran = "program p\n  ! EVOLVE-BLOCK-START\n  x = 1\n  ! EVOLVE-BLOCK-END\nend program p\n"
    assert [b.body for b in find_blocks(fortran)] == ["  x = 1\n"]  # ShinkaEvolve's Fortran example
    assert by_suffix(".f90").comment == "!" and by_name("fortran").tools == ("gfortran",)


def test_a_normal_form_in_the_languages_own_comments():
    rust, lang = (RUST / "initial_program.rs").read_text(), by_suffix(".rs")
    noted = rust.replace("let mut i = low;", "let mut i = low; // the next slot\n   /* x */")
    assert normalized_hash(noted, lang) == normalized_hash(rust, lang)
    # `#` starts no comment in Rust: an attribute is code
    assert normalized_hash(rust.replace("#[derive(Debug)]", ""), lang) != normalized_hash(
        rust, lang
    )


def test_a_diff_in_rust_is_applied_inside_its_block():
    rust = (RUST / "initial_program.rs").read_text()
    edit = apply_reply(rust, RUST_DIFF, "diff")
    assert edit.ok and edit.code is not None, edit.error
    assert "arr.sort_unstable();" in edit.code and edit.code.count("EVOLVE-BLOCK") == 2


def test_the_folders_load_with_their_language_and_tools():
    rust = load_problem(RUST)
    assert rust.entry == "initial_program.rs" and rust.language.name == "rust"
    assert rust.tools == ("cargo", "rustc")  # from its config.yaml's file_suffix: ".rs"
    cpp = load_problem(CPP)
    assert cpp.entry == "heuristic.cpp" and cpp.language.name == "cpp" and cpp.tools == ("g++",)


def test_the_toolchain_of_a_rustup_install_is_bound_with_its_home():
    tc = resolve(["cargo"])
    if tc.missing:
        pytest.skip("no cargo here")
    assert tc.env["CARGO_NET_OFFLINE"] == "true"
    if "RUSTUP_HOME" in tc.env:  # a rustup proxy: its toolchains are offered too
        assert tc.env["RUSTUP_HOME"] in tc.roots


def test_a_rustup_proxy_binds_its_bin_folder_and_home_never_the_cargo_token(tmp_path, monkeypatch):
    """~/.cargo holds credentials.toml (a crates.io token): only ~/.cargo/bin is offered."""
    cargo_home, rustup_home = tmp_path / ".cargo", tmp_path / ".rustup"
    (cargo_home / "bin").mkdir(parents=True)
    (rustup_home / "toolchains").mkdir(parents=True)
    (cargo_home / "credentials.toml").write_text('[registry]\ntoken = "secret"\n')
    rustup = cargo_home / "bin" / "rustup"
    rustup.write_text("#!/bin/sh\n")
    rustup.chmod(0o755)
    (cargo_home / "bin" / "cargo").symlink_to(rustup)
    monkeypatch.setenv("RUSTUP_HOME", str(rustup_home))
    tc = resolve(["cargo"], search_path=str(cargo_home / "bin"))
    assert set(tc.roots) == {str(cargo_home / "bin"), str(rustup_home)}
    assert tc.path == (str(cargo_home / "bin"),)


def test_a_rustup_proxy_finds_its_toolchains_beside_it_when_home_is_elsewhere(
    tmp_path, monkeypatch
):
    """HOME empty (a service account, a clean bench) and no RUSTUP_HOME: the toolchains of
    /home/u/.cargo/bin/cargo are in /home/u/.rustup, where rustup's installer put them."""
    user = tmp_path / "u"
    (user / ".cargo" / "bin").mkdir(parents=True)
    (user / ".rustup" / "toolchains").mkdir(parents=True)
    rustup = user / ".cargo" / "bin" / "rustup"
    rustup.write_text("#!/bin/sh\n")
    rustup.chmod(0o755)
    (user / ".cargo" / "bin" / "cargo").symlink_to(rustup)
    monkeypatch.delenv("RUSTUP_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "empty"))
    tc = resolve(["cargo"], search_path=str(user / ".cargo" / "bin"))
    assert tc.env["RUSTUP_HOME"] == str(user / ".rustup")
    assert host_env(str(user / ".cargo" / "bin" / "cargo")) == {
        "RUSTUP_HOME": str(user / ".rustup")
    }
    (tmp_path / "empty" / ".rustup").mkdir(parents=True)  # HOME's own wins where it exists
    assert resolve(["cargo"], search_path=str(user / ".cargo" / "bin")).env["RUSTUP_HOME"] == str(
        tmp_path / "empty" / ".rustup"
    )


def test_the_problems_vendored_crates_become_the_sandboxes_cargo_source(tmp_path, monkeypatch):
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "home" / ".cargo"))
    prepare_cargo(str(RUST))
    text = (tmp_path / "home" / ".cargo" / "config.toml").read_text()
    assert (
        f'directory = "{RUST / "vendor"}"' in text and 'replace-with = "vendored-sources"' in text
    )
    prepare_cargo(str(CPP))  # no .cargo/config.toml: nothing written over it
    assert (tmp_path / "home" / ".cargo" / "config.toml").read_text() == text


def test_check_names_a_missing_tool_in_one_line(tmp_path):
    folder = shutil.copytree(CPP, tmp_path / "cpp")
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().replace('tools = ["g++"]', 'tools = ["g++", "no-such-cc-42"]'))
    r = evolve("check", folder, "--sandbox", "local")
    assert r.returncode != 0
    [line] = [ln for ln in r.stdout.splitlines() if "not found" in ln]
    assert f"{toml}: [evaluation] tools" in line and "not found on PATH: no-such-cc-42 " in line
    assert "seed on" not in r.stdout  # nothing evaluated: every candidate would fail alike


def test_a_run_whose_seed_fails_names_the_missing_tool_in_its_one_line(tmp_path):
    """OpenEvolve's r_robust_regression without Rscript: its evaluator scores inf and says
    nothing of R; the run's one line names the tool this machine lacks."""
    folder = shutil.copytree(CPP, tmp_path / "cpp")
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().replace('tools = ["g++"]', 'tools = ["g++", "no-such-cc-42"]'))
    seed = folder / "heuristic.cpp"
    seed.write_text(seed.read_text().replace("return static_cast", "retrun"))
    with ScriptedLLM.from_list([Reply("nothing")]) as srv:
        r = evolve(
            *run_args(srv.base_url, tmp_path, problem=folder, iterations=1), "--sandbox", "local"
        )
    [line] = r.stderr.strip().splitlines()[-1:]
    assert r.returncode == 2 and line.startswith(f"evolve: error: {seed}: seed program failed"), (
        r.stderr
    )
    assert line.endswith(
        f"{toml}: [evaluation] tools: tool(s) not found on PATH: no-such-cc-42 "
        "(install them, e.g. `apt-get install cargo g++`, or fix `tools`)"
    ), line


@need_gpp
def test_cpp_check_and_eval_on_the_local_sandbox(tmp_path):
    c = evolve("check", CPP, "--sandbox", "local")
    assert c.returncode == 0, c.stdout + c.stderr
    assert "language: cpp (EVOLVE-BLOCK markers in // comments" in c.stdout
    assert "tools for the evaluator: g++" in c.stdout
    out = _eval(CPP, CPP / "heuristic.cpp")
    assert out["status"] == "ok" and out["score"] == pytest.approx(CPP_SEED_SCORE)
    broken = tmp_path / "heuristic.cpp"
    broken.write_text((CPP / "heuristic.cpp").read_text().replace("return static_cast", "retrun"))
    r = evolve("eval", CPP, broken, "--json", "--sandbox", "local")
    assert r.returncode != 0 and "compilation failed" in r.stdout + r.stderr


@need_gpp
def test_a_scripted_cpp_run_of_three_iterations(tmp_path):
    whole = (
        (CPP / "heuristic.cpp")
        .read_text()
        .replace(
            "return static_cast<double>(value);",
            "return static_cast<double>(value) / (weight + 1.0);",
        )
    )
    replies = [
        Reply(CPP_DIFF),
        Reply(f"A whole rewrite.\n\n```cpp\n{whole}```\n"),
        Reply(CPP_BROKEN_BLOCK),
    ]
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(srv.base_url, tmp_path, problem=CPP, iterations=3),
            "--sandbox",
            "local",
            "--parallel",
            "1",
        )
        prompts = [json.dumps(q) for q in srv.requests]
    assert r.returncode == 0, r.stderr
    assert prompts and "```cpp" in prompts[0] and "```python" not in prompts[0]
    rows = _programs(tmp_path)
    assert rows[0]["iteration"] == 0 and rows[0]["score"] == pytest.approx(CPP_SEED_SCORE)
    # the replies may reach the iterations in any order (requests overlap evaluations)
    [diffed] = [p for p in rows if "/ static_cast<double>(weight)" in (p["code"] or "")]
    assert diffed["status"] == "ok" and diffed["score"] == pytest.approx(CPP_DENSITY_SCORE)
    [whole] = [p for p in rows if "(weight + 1.0)" in (p["code"] or "")]
    assert whole["status"] == "ok" and whole["edit_kind"] in ("full", "block")
    [broken] = [p for p in rows if p["status"] != "ok"]
    assert broken["status"] == "invalid" and "compilation failed" in broken["artifacts_json"]


@pytest.mark.slow
@need_cargo
def test_rust_adaptive_sort_unchanged_check_and_eval_on_the_local_sandbox():
    c = evolve("check", RUST, "--sandbox", "local", timeout=280)
    assert c.returncode == 0, c.stdout + c.stderr
    assert "tools for the evaluator: cargo, rustc" in c.stdout
    out = _eval(RUST, RUST / "initial_program.rs")
    assert out["status"] == "ok" and out["metrics"]["correctness"] == 1.0, out
    assert out["metrics"]["compile_success"] == 1.0 and out["score"] > 0


@pytest.mark.slow
@need_cargo
def test_a_scripted_rust_run_of_three_iterations(tmp_path):
    seed = (RUST / "initial_program.rs").read_text()
    api_changed = seed.replace("pub times: Vec<f64>,", "pub times: Vec<f32>,")  # outside the block
    replies = [
        Reply(RUST_DIFF),
        Reply(RUST_SAME_AGAIN),
        Reply(f"Whole file.\n\n```rust\n{api_changed}```\n"),
    ]
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(srv.base_url, tmp_path, problem=RUST, iterations=3),
            "--sandbox",
            "local",
            "--parallel",
            "1",
            timeout=280,
        )
        prompts = [json.dumps(q) for q in srv.requests]
    assert r.returncode == 0, r.stderr
    assert "```rust" in prompts[0] and "// EVOLVE-BLOCK-START" in prompts[0]
    rows = _programs(tmp_path)
    assert rows[0]["status"] == "ok" and json.loads(rows[0]["metrics_json"])["correctness"] == 1.0
    # the replies may reach the iterations in any order (requests overlap evaluations); the
    # two sort_unstable programs differ in a comment and blanks only: one is a duplicate
    by_status = {p["status"]: p for p in rows[1:]}
    assert sorted(p["status"] for p in rows[1:]) == ["duplicate", "invalid_edit", "ok"]
    assert "sort_unstable()" in by_status["ok"]["code"]
    assert json.loads(by_status["ok"]["metrics_json"])["correctness"] == 1.0
    # the fixed code is the evaluator's API: a rewrite changing only it changes nothing
    assert by_status["invalid_edit"]["eval_s"] is None


# ---------------------------------------------------------------- the Docker sandbox
# The problem's layer carries its tools: g++ from Debian's package (with what the image
# lacks of its dependencies), the rustup toolchain copied in, gcc beside it to link.


def _docker_eval(folder: Path, program: Path) -> dict:
    r = evolve("eval", folder, program, "--json", "--sandbox", "docker", timeout=580)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert r.returncode == 0 and lines, r.stdout + r.stderr
    return json.loads(lines[-1])


def test_the_layer_plans_debian_packages_for_system_tools_and_copies_for_rustup(tmp_path):
    from evaluators.docker import tool_layer

    if shutil.which("g++") is None or shutil.which("dpkg") is None:
        pytest.skip("no g++ from a Debian package here")
    cpp = tool_layer.plan(["g++"], CPP)
    assert not cpp.copies and any(p.startswith("g++") for p in cpp.packages), cpp
    assert any(
        "dpkg -i /tmp/evolve-debs/*.deb" in line for line in tool_layer.dockerfile_lines(cpp)
    )
    if _cargo_version() >= (1, 85):
        rust = tool_layer.plan(["cargo", "rustc"], RUST)
        [copy] = rust.copies  # one toolchain, both programs linked from it
        assert copy.name == "rust" and {"bin/cargo", "bin/rustc"} <= set(copy.links)
        assert ".cargo" not in copy.source and {"gcc", "libc6-dev"} <= set(rust.packages)
        assert rust.env == {"CARGO_NET_OFFLINE": "true"}
    with pytest.raises(tool_layer.ImageError, match="'no-such-cc-42' .* is not installed"):
        tool_layer.plan(["no-such-cc-42"], tmp_path)


@need_gpp
@pytest.mark.timeout(900)  # the first call builds the layer: apt downloads g++, dpkg installs it
def test_cpp_eval_on_the_docker_sandbox(docker_image):  # noqa: F811
    out = _docker_eval(CPP, CPP / "heuristic.cpp")
    assert out["status"] == "ok" and out["score"] == pytest.approx(CPP_SEED_SCORE)


@pytest.mark.slow
@need_cargo
@pytest.mark.timeout(900)  # the first call copies the toolchain into the layer (~600 MB)
def test_rust_adaptive_sort_unchanged_on_the_docker_sandbox(docker_image):  # noqa: F811
    out = _docker_eval(RUST, RUST / "initial_program.rs")
    assert out["status"] == "ok" and out["metrics"]["correctness"] == 1.0, out
    assert out["metrics"]["compile_success"] == 1.0 and out["score"] > 0
