"""`evolve eval PROBLEM DIR`: a program of several files given as the folder holding them
(or as its tree's text), scored in the sandbox through the command line; an extra file, a
link, a path out of the tree, a reserved name or non-UTF-8 text is one line and exit 2, never
a traceback. A one-file problem still takes its file. (evolve/problem/program_input.py's rules:
tests/test_program_input.py.)"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evaluators import tree
from evolve.testing.cli_helpers import evolve

FIXTURES = Path(__file__).parent / "fixtures"
TREE = FIXTURES / "tree_native"
ONE_FILE = FIXTURES / "kit_problem" / "main"  # seed.py: double(v)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the tree problem's seed folder, to spoil."""
    dst = tmp_path / "program"
    shutil.copytree(TREE / "seed", dst)
    return dst


def _eval(program: Path | str, problem: Path = TREE):
    return evolve("eval", problem, program, "--sandbox", "local", "--json", timeout=120)


def test_a_folder_is_the_program(folder: Path) -> None:
    (folder / "pkg" / "ops.py").write_text("TWO = 2\n\ndef times(x, k):\n    return x * k\n")
    r = _eval(folder)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert (out["status"], out["score"]) == ("ok", 12.0)


def test_a_file_holding_the_trees_text(tmp_path: Path, folder: Path) -> None:
    files = {p: (folder / p).read_text() for p in ("pkg/__init__.py", "pkg/ops.py")}
    text = tmp_path / "program.txt"
    text.write_text(tree.encode(files))
    r = _eval(text)
    assert r.returncode == 0 and json.loads(r.stdout)["score"] == 12.0, r.stderr[-2000:]


def _spoil_extra(folder: Path) -> str:
    (folder / "pkg" / "extra.py").write_text("X = 1\n")
    return "pkg/extra.py: not a file of this program"


def _spoil_link(folder: Path) -> str:
    os.symlink("/etc/passwd", folder / "pkg" / "leak.py")
    return "a symbolic link"


def _spoil_linked_folder(folder: Path) -> str:
    shutil.rmtree(folder / "pkg")
    os.symlink(TREE / "seed" / "pkg", folder / "pkg")
    return "a symbolic link"


def _spoil_bytes(folder: Path) -> str:
    (folder / "pkg" / "ops.py").write_bytes(b"TWO = 2\n# \xff\xfe\n")
    return "not UTF-8 text (byte 10)"


def _spoil_name(folder: Path) -> str:
    (folder / "REQ.json").write_text("{}")
    return "reserved"


@pytest.mark.parametrize(
    "spoil", [_spoil_extra, _spoil_link, _spoil_linked_folder, _spoil_bytes, _spoil_name]
)
def test_a_bad_folder_is_one_line(folder: Path, spoil) -> None:
    want = spoil(folder)
    r = _eval(folder)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and want in lines[0], r.stderr[-2000:]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_an_escaping_tree_text_is_one_line(tmp_path: Path) -> None:
    text = tmp_path / "program.txt"
    text.write_text(f"{tree.HEADER}pkg/__init__.py\nX = 1\n{tree.HEADER}../escape.py\nY = 2\n")
    r = _eval(text)
    assert r.returncode == 2 and "'..'" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
        r.stderr
    )
    assert not (tmp_path.parent / "escape.py").exists()


def test_one_file_for_a_tree_and_a_folder_for_one_file(folder: Path, tmp_path: Path) -> None:
    r = _eval(folder / "pkg" / "__init__.py")
    assert r.returncode == 2 and "give a folder holding them" in r.stderr, r.stderr
    r = _eval(folder, ONE_FILE)
    assert r.returncode == 2 and "no such program file" in r.stderr, r.stderr
    r = _eval(ONE_FILE / "seed.py", ONE_FILE)  # a file still works as it did
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr[-2000:]
