"""A program named on disk (`evolve eval`, a problem's baselines) as the one text a run
carries: a one-file problem's file exactly as before; a program of several files as a folder
or a tree's text, completed from the seed, every misfit one line naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluators.tree import decode
from evolve.edits.blocks import complete_from_seed
from evolve.problem.baselines import baseline_files, cache_file
from evolve.problem.load import load_problem
from evolve.problem.program_input import ProgramInputError, program_code, program_digest

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "tree_policy"
BINPACK = ROOT / "problems" / "binpack"
RANK_BODY = "# EVOLVE-BLOCK-START\ndef weight(item):\n    return item[0]\n# EVOLVE-BLOCK-END\n"


@pytest.fixture(scope="module")
def tree():
    return load_problem(TREE)


def _folder(base: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    return base


def test_a_one_file_program_is_completed_as_ever(tmp_path):
    p = load_problem(BINPACK)
    baseline = BINPACK / "baselines" / "first_fit.py"
    assert program_code(p, baseline) == complete_from_seed(baseline.read_text(), p.seed_code)
    with pytest.raises(ProgramInputError, match="no such program file"):
        program_code(p, tmp_path)  # a folder is no one-file program


def test_a_folder_holds_what_it_changes_and_the_rest_is_the_seed(tree, tmp_path):
    seed = decode(tree.seed_code, tree.entry)
    code = program_code(tree, _folder(tmp_path, {"policy/rank.py": RANK_BODY}))
    files = decode(code, tree.entry)
    assert list(files) == list(tree.files)
    assert files["policy/pick.py"] == seed["policy/pick.py"]
    assert files["policy/__init__.py"] == seed["policy/__init__.py"]
    assert "return item[0]" in files["policy/rank.py"]
    assert files["policy/rank.py"].startswith('"""How good an item is to pack."""')  # fixed code
    # a whole checkout (every file, the fixed one unchanged) is the same program
    whole = _folder(tmp_path / "whole", files)
    (whole / "policy" / "__pycache__").mkdir()
    (whole / "policy" / "__pycache__" / "rank.cpython-311.pyc").write_bytes(b"\0\xff")
    assert program_code(tree, whole) == code
    # and so is the tree's one text in a file (`archive best --json`'s code)
    (tmp_path / "tree.txt").write_text(code)
    assert program_code(tree, tmp_path / "tree.txt") == code


@pytest.mark.parametrize(
    "files, error",
    [
        ({"policy/other.py": "x = 1\n"}, "policy/other.py: not a file of this program"),
        (
            {"policy/__init__.py": "def pack(*a):\n    return []\n"},
            "policy/__init__.py: a fixed file",
        ),
        (
            {"policy/rank.py": "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n" * 2},
            "policy/rank.py:",
        ),
    ],
)
def test_a_folder_that_does_not_fit_is_one_line_naming_the_file(tree, tmp_path, files, error):
    with pytest.raises(ProgramInputError) as e:
        program_code(tree, _folder(tmp_path, files))
    assert error in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_links_non_utf8_and_one_file_texts_are_refused(tree, tmp_path):
    linked = _folder(tmp_path / "linked", {"policy/pick.py": "x = 1\n"})
    os.symlink(TREE / "policy" / "rank.py", linked / "policy" / "rank.py")
    with pytest.raises(ProgramInputError, match="a symbolic link"):
        program_code(tree, linked)
    binary = tmp_path / "binary" / "policy"
    binary.mkdir(parents=True)
    (binary / "rank.py").write_bytes(b"x = '\xff'\n")
    with pytest.raises(ProgramInputError, match="not UTF-8 text"):
        program_code(tree, binary.parent)
    (tmp_path / "one.py").write_text("def weight(item):\n    return 1\n")
    with pytest.raises(ProgramInputError, match="this problem's program is 3 files"):
        program_code(tree, tmp_path / "one.py")
    (tmp_path / "escaping.txt").write_text("# evolve-file: ../x.py\nx = 1\n")
    with pytest.raises(ProgramInputError, match="escaping.txt: file path '../x.py'"):
        program_code(tree, tmp_path / "escaping.txt")
    with pytest.raises(ProgramInputError, match="no such program file or folder"):
        program_code(tree, tmp_path / "nowhere")


def test_baseline_folders_are_listed_and_cached_by_their_files(tmp_path):
    problem = _folder(
        tmp_path / "p", {"baselines/a.py": "x\n", "baselines/b/policy/rank.py": "y\n"}
    )
    (problem / "baselines" / "__pycache__").mkdir()
    assert [f.name for f in baseline_files(problem)] == ["a.py", "b"]
    folder = problem / "baselines" / "b"
    before = cache_file("k", folder)
    assert program_digest(folder) == program_digest(folder)
    (folder / "policy" / "rank.py").write_text("z\n")
    assert cache_file("k", folder) != before  # an edited baseline is scored again
