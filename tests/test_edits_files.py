"""Edits of a program of several files address files by path: SEARCH/REPLACE under a path
line (or a fence header, or a heading), a block or a whole file under its path; an edit of a
fixed or unknown file is refused with the reason, and a one-file program is as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluators import tree
from evolve.edits.files import apply_tree_reply, named_path, split_by_file
from evolve.pipeline.candidates import edit_of, tree_layout
from evolve.problem.load import load_problem

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tree_policy"
PROBLEM = load_problem(FIXTURE)
SEED = PROBLEM.seed_code
RANK_SR = """policy/rank.py
<<<<<<< SEARCH
    return value - SIZE_PENALTY * size
=======
    return value / size
>>>>>>> REPLACE
"""


def _apply(reply: str, asked: str = "diff", parent: str = SEED):
    return edit_of(reply, asked, parent, PROBLEM)


def _files(code: str) -> dict[str, str]:
    return tree.decode(code, PROBLEM.entry)


@pytest.mark.parametrize(
    "line, path",
    [
        ("policy/rank.py", "policy/rank.py"),
        ("### policy/rank.py", "policy/rank.py"),
        ("**File: `policy/pick.py`**", "policy/pick.py"),
        ("`policy/pick.py`:", "policy/pick.py"),
        ("# evolve-file: policy/pick.py", "policy/pick.py"),
        ("./main.rs", "main.rs"),
        ("math.pi", None),
        ("return x.py_value", None),
        ("I changed policy/rank.py", None),
    ],
)
def test_a_line_naming_a_file(line, path):
    assert named_path(line) == path


def test_search_replace_under_path_lines_edits_those_files():
    reply = (
        "Rank by density, and pick greedily but skip nothing.\n\n"
        + RANK_SR
        + "\npolicy/pick.py\n```python\n<<<<<<< SEARCH\n    taken, used = [], 0\n=======\n"
        "    taken, used = [], 0  # greedy\n>>>>>>> REPLACE\n```\n"
    )
    out = _apply(reply)
    assert out.ok, out.error
    files = _files(out.code)
    assert "return value / size" in files["policy/rank.py"]
    assert "# greedy" in files["policy/pick.py"]
    assert files["policy/__init__.py"] == _files(SEED)["policy/__init__.py"]
    assert "--- a/policy/rank.py" in out.diff and "+++ b/policy/pick.py" in out.diff
    assert "policy/__init__.py" not in out.diff


def test_the_path_in_a_fence_header_or_inside_the_fence():
    fenced = "```python policy/rank.py\n" + RANK_SR.split("\n", 1)[1] + "```\n"
    out = _apply(fenced)
    assert out.ok, out.error
    assert "value / size" in _files(out.code)["policy/rank.py"]
    inside = "```python\n" + RANK_SR + "```\n"  # aider's diff-fenced: the path in the fence
    out = _apply(inside)
    assert out.ok, out.error
    assert "value / size" in _files(out.code)["policy/rank.py"]


def test_a_whole_file_rewrite_under_its_path():
    reply = (
        "### policy/pick.py\n```python\ndef choose(ranked, capacity):\n"
        "    return [it for it in ranked if it[1] <= capacity][:1]\n```\n"
    )
    out = _apply(reply, "full")
    assert out.ok, out.error
    files = _files(out.code)
    assert files["policy/pick.py"].startswith("def choose(ranked, capacity):\n    return [it")
    assert files["policy/rank.py"] == _files(SEED)["policy/rank.py"]


def test_a_block_rewrite_under_its_path():
    reply = (
        "policy/rank.py\n```python\n# EVOLVE-BLOCK-START\ndef weight(item):\n"
        "    value, size = item\n    return value / (size + 1)\n# EVOLVE-BLOCK-END\n```\n"
    )
    out = _apply(reply, "block")
    assert out.ok, out.error
    rank = _files(out.code)["policy/rank.py"]
    assert "value / (size + 1)" in rank and rank.startswith('"""How good an item is to pack."""')


def test_the_whole_tree_written_back_with_its_headers():
    files = _files(SEED)
    files["policy/rank.py"] = files["policy/rank.py"].replace("SIZE_PENALTY *", "0.75 *")
    out = _apply("```python\n" + tree.encode(files) + "```\n", "full")
    assert out.ok, out.error
    assert out.code == tree.encode(files)


@pytest.mark.parametrize(
    "reply, fragment",
    [
        (
            "policy/__init__.py\n<<<<<<< SEARCH\n    return choose(ranked, capacity)\n=======\n"
            "    return []\n>>>>>>> REPLACE\n",
            "the reply edits 'policy/__init__.py', a fixed file that no edit may change",
        ),
        (
            "policy/extra.py\n```python\nimport os\n```\n",
            "the reply edits 'policy/extra.py', which is not a file of this program",
        ),
        (
            "policy/rank.py\n<<<<<<< SEARCH\nSIZE_PENALTY = 0.5\n=======\nSIZE_PENALTY = 9\n>>>>>>> REPLACE\n",
            "policy/rank.py: the edit changes fixed code outside the EVOLVE-BLOCKs",
        ),
        (
            "policy/rank.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n",
            "policy/rank.py: SEARCH text not found",
        ),
    ],
)
def test_an_edit_of_a_fixed_or_unknown_file_or_outside_blocks_is_refused(reply, fragment):
    out = _apply(reply)
    assert not out.ok and out.code is None
    assert fragment in (out.error or ""), out.error
    assert "\n" not in (out.error or "")


def test_a_fixed_file_shown_back_unchanged_is_no_edit_of_it():
    init = _files(SEED)["policy/__init__.py"]
    reply = f"policy/__init__.py\n```python\n{init}```\n\n" + RANK_SR
    out = _apply(reply)
    assert out.ok, out.error
    assert _files(out.code)["policy/__init__.py"] == init


def test_edits_naming_no_file_go_where_they_fit():
    out = _apply(RANK_SR.split("\n", 1)[1])  # no path line
    assert out.ok, out.error
    assert "value / size" in _files(out.code)["policy/rank.py"]
    assert any("applied to policy/rank.py" in n for n in out.notes)
    out = _apply("<<<<<<< SEARCH\nnowhere\n=======\nx\n>>>>>>> REPLACE\n")
    assert not out.ok and "name no file" in (out.error or "")


def test_a_parent_whose_fixed_file_drifted_is_refused():
    files = _files(SEED)
    files["policy/__init__.py"] += "X = 1\n"
    out = _apply(RANK_SR, parent=tree.encode(files))
    assert not out.ok and "fixed file 'policy/__init__.py' differs from the seed's" in (
        out.error or ""
    )


def test_no_change_and_oversized_trees():
    same = RANK_SR.replace("    return value / size", "    return value - SIZE_PENALTY * size")
    out = _apply(same)
    assert not out.ok and out.error == "the edit does not change the program"
    big = RANK_SR.replace("return value / size", "return value / size" + " + 0" * 40000)
    out = _apply(big)
    assert not out.ok and out.oversized is not None


def test_prose_lines_with_paths_do_not_split_code():
    reply = "I will change `policy/rank.py` now:\n\n" + RANK_SR
    sections = split_by_file(reply)
    assert [p for p, _ in sections] == [None, "policy/rank.py"]


def test_a_hostile_reply_never_raises():
    lay = tree_layout(PROBLEM)
    for reply in ("policy/rank.py\n" * 5000, "```python policy/rank.py\n" * 3000, "\x00" * 100):
        out = apply_tree_reply(SEED, reply, "diff", lay, PROBLEM.max_code_bytes)
        assert not out.ok and out.error


def test_a_program_given_as_files_is_completed_and_checked():
    from evolve.edits.files import complete_tree

    lay, seed = tree_layout(PROBLEM), _files(SEED)
    given = {
        "policy/rank.py": seed["policy/rank.py"],
        "policy/pick.py": "def choose(r, c):\n    return []\n",
    }
    code = complete_tree(given, lay, SEED)
    assert _files(code)["policy/__init__.py"] == seed["policy/__init__.py"]
    assert _files(code)["policy/pick.py"] == given["policy/pick.py"]
    block = "# EVOLVE-BLOCK-START\ndef weight(item):\n    return 1\n# EVOLVE-BLOCK-END\n"
    bodies_only = {**given, "policy/rank.py": block}
    assert "return 1" in _files(complete_tree(bodies_only, lay, SEED))["policy/rank.py"]
    bad = [
        ({**given, "policy/x.py": "x"}, "policy/x.py: not a file of this program"),
        ({"policy/rank.py": seed["policy/rank.py"]}, "policy/pick.py: missing"),
        ({**given, "policy/__init__.py": "X = 1\n"}, "policy/__init__.py: a fixed file"),
        ({**given, "policy/rank.py": block * 2}, "policy/rank.py: the file holds 2 EVOLVE-BLOCK"),
    ]
    for files, fragment in bad:
        with pytest.raises(ValueError, match=fragment.replace(".", r"\.")):
            complete_tree(files, lay, SEED)
