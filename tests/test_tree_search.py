"""The search's views of a program of several files: clone hashes, evolvable text and constant
tuning see the whole tree, file by file, and never a fixed file or a header."""

from __future__ import annotations

from pathlib import Path

from evaluators import tree
from evolve.edits import normalized_hash
from evolve.edits.blocks import evolvable_text
from evolve.problem.load import load_problem
from evolve.search.population import Features
from evolve.search.tune import variants

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tree_policy"
PROBLEM = load_problem(FIXTURE)
SEED = PROBLEM.seed_code
FILES = tree.decode(SEED, PROBLEM.entry)


def _with(path: str, text: str) -> str:
    return tree.encode({**FILES, path: text})


def test_clones_of_a_tree_hash_alike_and_other_trees_do_not():
    reformatted = _with(
        "policy/pick.py", FILES["policy/pick.py"].replace("    ", "  ") + "# note\n"
    )
    assert normalized_hash(reformatted) == normalized_hash(SEED)
    changed = _with("policy/pick.py", FILES["policy/pick.py"].replace("<=", "<"))
    assert normalized_hash(changed) != normalized_hash(SEED)
    # the same code in other files is another program
    moved = tree.encode(
        {
            "policy/rank.py": FILES["policy/pick.py"],
            "policy/pick.py": FILES["policy/rank.py"],
            "policy/__init__.py": FILES["policy/__init__.py"],
        }
    )
    assert normalized_hash(moved) != normalized_hash(SEED)


def test_evolvable_text_is_each_evolving_file_under_its_path():
    text = evolvable_text(SEED, PROBLEM.fixed_files)
    shown = tree.decode(text, "")
    assert list(shown) == ["policy/rank.py", "policy/pick.py"]
    assert shown["policy/rank.py"].startswith("def weight(item):")  # the block's body
    assert "SIZE_PENALTY = 0.5" not in shown["policy/rank.py"]
    assert shown["policy/pick.py"] == FILES["policy/pick.py"]  # evolvable whole
    features = Features(SEED, ("code_length", "diversity"), 8, PROBLEM.fixed_files)
    assert features.values(SEED, {})["diversity"] == 0.0
    moved = features.values(_with("policy/pick.py", "def choose(r, c):\n    return []\n"), {})
    assert moved["diversity"] > 0.2


def test_tuning_reaches_every_evolving_file_and_no_fixed_one():
    files = {
        **FILES,
        "policy/pick.py": FILES["policy/pick.py"].replace("used = [], 0", "used = [], 3"),
    }
    files["policy/rank.py"] = FILES["policy/rank.py"].replace("SIZE_PENALTY * size", "0.5 * size")
    files["policy/__init__.py"] = FILES["policy/__init__.py"] + "LIMIT = 7\n"
    code = tree.encode(files)
    out = variants(code, PROBLEM.fixed_files)
    changed = []
    for v in out:
        got = tree.decode(v, PROBLEM.entry)
        assert list(got) == list(files)  # same files, same order, headers intact
        diff = [p for p in files if got[p] != files[p]]
        assert len(diff) == 1
        changed.append(diff[0])
    assert changed[:2] == ["policy/rank.py", "policy/pick.py"]  # each file reached early
    assert "policy/__init__.py" not in changed
    assert all("SIZE_PENALTY = 0.5\n" in tree.decode(v, "")["policy/rank.py"] for v in out)
