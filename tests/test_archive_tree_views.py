"""`evolve archive show / diff / best --json / checkout` on programs whose code is a tree,
run as a user runs them (the real CLI in a subprocess) on a real archive."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evaluators import tree
from evolve.archive import Archive, ProgramRow
from evolve.testing.cli_helpers import BINPACK, archive_json, evolve

BIDI = "\u202e"
SEED = {
    "policy/__init__.py": "from policy import admission, batching\n",
    "policy/admission.py": "def admit(q):\n    return q[:4]\n",
    "policy/batching.py": f"def batch(q):\n    return q  # {BIDI}hidden\n",
}
CHILD = {  # batching changed, eviction added
    "policy/__init__.py": SEED["policy/__init__.py"],
    "policy/admission.py": SEED["policy/admission.py"],
    "policy/batching.py": "def batch(q):\n    return sorted(q)\n",
    "policy/eviction.py": "def evict(cache):\n    return cache[-1]\n",
}
GRANDCHILD = {k: v for k, v in CHILD.items() if k != "policy/admission.py"}  # one removed


def prog(it: int, code: str | None, parent: str | None = None, **kw) -> ProgramRow:
    return ProgramRow(
        f"t:{it}",
        "t",
        "binpack",
        it,
        0,
        kw.pop("status", "ok"),
        code=code,
        parent_id=parent,
        kind="seed" if it == 0 else "mutation",
        score=kw.pop("score", float(it)),
        **kw,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("views") / "runs"
    a = Archive(runs)
    a.create_run("t", "binpack", str(BINPACK), {}, 4)  # binpack's entry: seed.py
    a.insert_program(prog(0, tree.encode(SEED)))
    a.insert_program(prog(1, tree.encode(CHILD), "t:0", score=5.0))
    a.insert_program(prog(2, tree.encode(GRANDCHILD), "t:1"))
    a.insert_program(prog(3, "def priority(item, bins):\n    return bins\n", "t:0"))
    a.insert_program(prog(4, None, "t:1", status="invalid_edit", score=None))
    escape = "# evolve-file: ../outside.py\nx = 1\n# evolve-file: b.py\ny = 2\n"
    a.insert_program(prog(5, escape, "t:1", score=None))  # not a tree: one text
    a.close()
    return runs


def test_best_json_has_a_files_map_beside_code(runs):
    best = archive_json(runs, "best", "--run", "t")
    assert best["program_id"] == "t:1" and best["code"] == tree.encode(CHILD)
    assert best["files"] == CHILD and list(best["files"]) == list(CHILD)
    one = archive_json(runs, "show", "t:3")  # one file: under its problem's entry name
    assert one["files"] == {"seed.py": one["code"]}
    assert archive_json(runs, "show", "t:4")["files"] is None  # no code at all
    per_problem = evolve("archive", "best", "--json", "--runs-dir", runs)
    assert per_problem.returncode == 0, per_problem.stderr
    assert '"files": {"policy/__init__.py"' in per_problem.stdout


def test_show_prints_each_file_under_its_path(runs):
    r = evolve("archive", "show", "t:1", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    at = [out.index(f"── {path}") for path in CHILD]
    assert at == sorted(at) and "4 files: policy/__init__.py, policy/admission.py" in out
    assert "return sorted(q)" in out and "return cache[-1]" in out
    shown = evolve("archive", "show", "t:0", "--runs-dir", runs).stdout
    assert "hidden" in shown  # the bidi character, on a terminal, is shown escaped: not here
    code = evolve("archive", "show", "t:1", "--code", "--runs-dir", runs)
    assert code.stdout == tree.encode(CHILD)  # --code: the exact text, as always


def test_diff_is_per_file_and_applies_as_a_patch(runs, tmp_path):
    r = evolve("archive", "diff", "t:1", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    d = r.stdout
    assert "--- a/policy/batching.py\n+++ b/policy/batching.py\n" in d
    assert "--- /dev/null\n+++ b/policy/eviction.py\n" in d  # added: named
    assert "admission" not in d and "__init__" not in d  # unchanged files: not there
    assert f"-    return q  # {BIDI}hidden\n" in d  # to a pipe: byte-exact
    removed = evolve("archive", "diff", "t:2", "--runs-dir", runs).stdout
    assert "--- a/policy/admission.py\n+++ /dev/null\n" in removed
    # the diff is a patch: the parent's checkout, patched, is the child's
    for pid, where in (("t:0", "a"), ("t:2", "c")):
        assert (
            evolve("archive", "checkout", pid, tmp_path / where, "--runs-dir", runs).returncode == 0
        )
    for diff in (d, removed):
        p = subprocess.run(
            ["patch", "-p1", "-E", "-s"], input=diff, text=True, cwd=tmp_path / "a",
            capture_output=True,
        )  # fmt: skip
        assert p.returncode == 0, p.stdout + p.stderr
    assert _tree(tmp_path / "a") == _tree(tmp_path / "c") == GRANDCHILD
    one = evolve("archive", "diff", "t:3", "t:0", "--runs-dir", runs).stdout  # tree vs one file
    assert "--- /dev/null\n+++ b/seed.py\n" in one
    assert "--- a/policy/batching.py\n+++ /dev/null\n" in one


def test_checkout_writes_the_tree_or_the_one_file(runs, tmp_path):
    r = evolve("archive", "checkout", "t:1", tmp_path / "new" / "tree", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    assert "4 files of t:1" in r.stdout
    assert _tree(tmp_path / "new" / "tree") == CHILD
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["tree"]  # no temporary left
    (tmp_path / "empty").mkdir()
    one = evolve("archive", "checkout", "t:3", tmp_path / "empty", "--runs-dir", runs)
    assert one.returncode == 0, one.stderr
    assert _tree(tmp_path / "empty") == {"seed.py": "def priority(item, bins):\n    return bins\n"}


def _one_line(r: subprocess.CompletedProcess, *fragments: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for f in fragments:
        assert f in r.stderr, r.stderr


def test_checkout_refuses_what_it_must(runs, tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    _one_line(
        evolve("archive", "checkout", "t:1", full, "--runs-dir", runs), str(full), "not empty"
    )
    assert [p.name for p in full.iterdir()] == ["keep.txt"]
    (tmp_path / "file").write_text("x")
    _one_line(
        evolve("archive", "checkout", "t:1", tmp_path / "file", "--runs-dir", runs),
        "not a folder",
    )
    (tmp_path / "target").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "target")
    _one_line(
        evolve("archive", "checkout", "t:1", tmp_path / "link", "--runs-dir", runs),
        "symbolic link",
    )
    assert not any((tmp_path / "target").iterdir())
    _one_line(
        evolve("archive", "checkout", "t:4", tmp_path / "none", "--runs-dir", runs),
        "t:4",
        "no code",
    )
    # a text whose header names a path outside the tree is one file, never written outside
    r = evolve("archive", "checkout", "t:5", tmp_path / "esc" / "in", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    assert _tree(tmp_path / "esc") == {"in/seed.py": _code(runs, "t:5")}
    assert not (tmp_path / "esc" / "outside.py").exists()


def _code(runs: Path, pid: str) -> str:
    return archive_json(runs, "show", pid)["code"]


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_exports_carry_the_files(runs, tmp_path):
    import json

    import pandas as pd

    for fmt in ("jsonl", "parquet", "csv"):
        r = evolve(
            "archive", "export", "t", "--format", fmt, "--out", tmp_path / f"p.{fmt}",
            "--runs-dir", runs,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert rows[1]["files"] == CHILD and rows[1]["code"] == tree.encode(CHILD)
    assert rows[3]["files"] == {"seed.py": rows[3]["code"]} and rows[4]["files"] is None
    pq = pd.read_parquet(tmp_path / "p.parquet")
    assert dict(pq.loc[1, "files"]) == CHILD and [k for k, _ in pq.loc[1, "files"]] == list(CHILD)
    assert pq.loc[4, "files"] is None
    csv = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert json.loads(csv.loc[1, "files"]) == CHILD and csv.loc[4, "files"] == ""


def test_a_one_file_diff_is_labelled_with_both_ids(web_archive):
    """`archive diff A B` of two programs that are not parent and child names each by its id."""
    runs, run_id = web_archive.runs_dir, web_archive.run_id
    r = evolve("archive", "diff", f"{run_id}:1", f"{run_id}:0", "--runs-dir", runs)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"--- {run_id}:0\n+++ {run_id}:1\n"), r.stdout[:200]
