"""A native problem whose program is several files ([program] in problem.toml) loads as one
encoded tree, and every bad tree fails with one clear line naming the key or the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluators import tree
from evolve.problem.load import ProblemError, load_problem, require_blocks
from evolve.settings.overrides import Overrides

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "tree_policy"
EVALUATOR = "def evaluate(p, s):\n    return {}\n"


def _folder(tmp_path: Path, program: str, files: dict[str, bytes | str], entry: str) -> Path:
    (tmp_path / "problem.toml").write_text(
        f'[problem]\nname = "t"\nentry = "{entry}"\n[program]\n{program}\n'
    )
    (tmp_path / "evaluator.py").write_text(EVALUATOR)
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        data = text.encode() if isinstance(text, str) else text
        (tmp_path / path).write_bytes(data)
    return tmp_path


def test_the_fixture_loads_as_an_encoded_tree():
    p = load_problem(FIXTURE)
    assert p.files == ("policy/rank.py", "policy/pick.py", "policy/__init__.py")
    assert p.fixed_files == ("policy/__init__.py",)
    assert p.evolving_files == ("policy/rank.py", "policy/pick.py")
    assert p.entry == "policy/__init__.py" and p.language.is_python
    assert tree.is_tree(p.seed_code)
    files = tree.decode(p.seed_code, p.entry)
    assert list(files) == list(p.files)
    assert files["policy/pick.py"] == (FIXTURE / "policy" / "pick.py").read_text()
    assert p.seed_file == FIXTURE
    require_blocks(p)  # an evolving file without markers evolves whole: no error


def test_a_folder_declares_every_file_under_it(tmp_path):
    files = {"seed/a.py": "A = 1\n", "seed/pkg/b.py": "B = 2\n", "seed/main.py": "import a\n"}
    (tmp_path / "seed" / "__pycache__").mkdir(parents=True)
    (tmp_path / "seed" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0\1")
    p = load_problem(_folder(tmp_path, 'folder = "seed"\nfixed = ["main.py"]', files, "main.py"))
    assert p.files == ("a.py", "main.py", "pkg/b.py")
    assert p.fixed_files == ("main.py",) and p.entry == "main.py"
    assert tree.decode(p.seed_code, p.entry)["pkg/b.py"] == "B = 2\n"


def test_one_file_programs_are_as_before(tmp_path):
    """A [program] of one file is the one-file case; a folder without [program] is unchanged."""
    p = load_problem(
        _folder(tmp_path, 'files = ["x/seed.py"]', {"x/seed.py": "X = 1\n"}, "x/seed.py")
    )
    assert p.files == () and p.entry == "seed.py" and p.seed_code == "X = 1\n"
    binpack = load_problem(ROOT / "problems" / "binpack")
    assert binpack.files == () and binpack.fixed_files == () and binpack.entry.endswith(".py")


GOOD = {"a.py": "A = 1\n", "b.py": "B = 2\n"}


@pytest.mark.parametrize(
    "program, files, entry, fragment",
    [
        ('files = ["a.py", "c.py"]', GOOD, "a.py", "c.py: no such file"),
        ('files = ["a.py", "a.py"]', GOOD, "a.py", "[program] files: 'a.py' is named twice"),
        ('files = ["a.py"]\nfixed = ["a.py"]', GOOD, "a.py", "'a.py' is listed in 'files' too"),
        ('files = ["a.py", "../b.py"]', GOOD, "a.py", "[program] files: file path '../b.py'"),
        ('files = ["a.py", "/etc/passwd"]', GOOD, "a.py", "must be relative"),
        (
            'files = ["a.py", "b.py"]',
            GOOD,
            "c.py",
            "[problem] entry: 'c.py' is not a file of the program",
        ),
        (
            'files = ["a.py", "b.py"]',
            {**GOOD, "b.py": b"x = '\xff'\n"},
            "a.py",
            "b.py: not UTF-8 text",
        ),
        ('files = ["a.py", "b.py"]', {**GOOD, "b.py": "x = (\n"}, "a.py", "b.py:1: does not parse"),
        (
            'files = ["a.py", "b.py"]',
            {**GOOD, "b.py": "# EVOLVE-BLOCK-START\nx = 1\n"},
            "a.py",
            "b.py: ",
        ),
        (
            'files = ["a.py", "b.py"]',
            {**GOOD, "b.py": "x = 1\n" * 12000},
            "a.py",
            "b.py: 72,000 bytes",
        ),
        ('files = ["a.py"]\nfolder = "s"', GOOD, "a.py", "give 'files' or 'folder', not both"),
        ("fixed = []", GOOD, "a.py", "name the evolving files with 'files' or a 'folder'"),
        ('folder = "nope"', GOOD, "a.py", "[program] folder: 'nope' is not a folder"),
        (
            'files = ["a.py"]\nfixed = ["b.py"]',
            {**GOOD, "b.py": "# evolve-file: x\n"},
            "a.py",
            "line 1 starts with",
        ),
        ('files = ["a.py", "evaluator.py"]', GOOD, "a.py", "evaluator.py"),
        ('files = ["a.py"]\nfile = ["b.py"]', GOOD, "a.py", "[program] unknown key 'file'"),
    ],
)
def test_a_bad_tree_is_one_line(tmp_path, program, files, entry, fragment):
    _folder(tmp_path, program, files, entry)
    with pytest.raises(ProblemError) as e:
        load_problem(tmp_path)
    msg = str(e.value)
    assert fragment in msg and "\n" not in msg, msg


def test_the_files_together_are_capped(tmp_path):
    big = {"a.py": "a = 1\n" * 6000, "b.py": "b = 1\n" * 6000}
    toml = '[problem]\nname = "t"\nentry = "a.py"\n[program]\nfiles = ["a.py", "b.py"]\n'
    _folder(tmp_path, 'files = ["a.py", "b.py"]', big, "a.py")
    (tmp_path / "problem.toml").write_text(toml + "[evaluation]\nmax_code_kb = 64\n")
    with pytest.raises(ProblemError, match="the program's files are 72,0.. bytes together"):
        load_problem(tmp_path)


def test_a_link_in_the_tree_is_refused(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    root = tmp_path / "p"
    root.mkdir()
    _folder(root, 'files = ["a.py", "b.py"]', {"a.py": "A = 1\n"}, "a.py")
    os.symlink(outside, root / "b.py")
    with pytest.raises(ProblemError, match="b.py: a symbolic link"):
        load_problem(root)
    (root / "seed").mkdir()
    (root / "seed" / "a.py").write_text("A = 1\n")
    os.symlink(outside, root / "seed" / "b.py")
    (root / "problem.toml").write_text(
        '[problem]\nname = "t"\nentry = "a.py"\n[program]\nfolder = "seed"\n'
    )
    with pytest.raises(ProblemError, match="b.py: a symbolic link"):
        load_problem(root)
    os.symlink(root / "seed", root / "linked")
    (root / "problem.toml").write_text(
        '[problem]\nname = "t"\nentry = "a.py"\n[program]\nfolder = "linked"\n'
    )
    with pytest.raises(ProblemError, match="'linked' is not a folder"):
        load_problem(root)


def test_initial_program_is_a_folder_of_the_same_files(tmp_path):
    other = tmp_path / "other"
    (other / "policy").mkdir(parents=True)
    for name in ("rank.py", "pick.py", "__init__.py"):
        text = (FIXTURE / "policy" / name).read_text()
        (other / "policy" / name).write_text(text.replace("0.5", "0.25"))
    p = load_problem(FIXTURE, Overrides(initial_program=str(other)))
    assert "SIZE_PENALTY = 0.25" in p.seed_code
    with pytest.raises(ProblemError, match="give a folder holding them"):
        load_problem(FIXTURE, Overrides(initial_program=str(other / "policy" / "rank.py")))
    (other / "policy" / "pick.py").unlink()
    with pytest.raises(ProblemError, match="pick.py: no such file"):
        load_problem(FIXTURE, Overrides(initial_program=str(other)))
