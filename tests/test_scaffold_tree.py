"""`evolve new NAME --files N`: a problem whose policy is N evolving files and a fixed entry,
which `evolve check` passes and `evolve eval` scores as written; `--files 1` (or none) is
the one-file scaffold, byte for byte."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evaluators.tree import decode
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import env, evolve


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        q.relative_to(folder).as_posix(): q.read_bytes()
        for q in sorted(folder.rglob("*"))
        if q.is_file()
    }


def test_files_1_is_the_one_file_scaffold(tmp_path):
    for args in ((), ("--files", "1")):
        r = evolve("new", tmp_path / f"one{len(args)}" / "sched", *args)
        assert r.returncode == 0, r.stderr
    a, b = (_tree(tmp_path / f"one{n}" / "sched") for n in (0, 2))
    a["README.md"] = a["README.md"].replace(b"/one0/", b"/one2/")  # the README names the folder
    assert a == b and "seed.py" in a and "baselines/spt.py" in a
    assert b"[program]" not in a["problem.toml"]
    assert load_problem(tmp_path / "one0" / "sched").files == ()


def test_a_scaffold_of_three_files_checks_and_evaluates(tmp_path):
    new = tmp_path / "sched3"
    r = evolve("new", new, "--files", "3")
    assert r.returncode == 0, r.stderr
    p = load_problem(new)
    parts = ("policy/part1.py", "policy/part2.py", "policy/part3.py")
    assert set(p.files) == {"policy/__init__.py", *parts}
    assert p.fixed_files == ("policy/__init__.py",) and set(p.evolving_files) == set(parts)
    assert p.entry == "policy/__init__.py" and list(decode(p.seed_code, p.entry)) == list(p.files)
    r = evolve("check", new)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for part in parts:
        assert part in r.stdout  # check lists the program's files
    seed = json.loads(evolve("eval", new, new / "seed", "--split", "train", "--json").stdout)
    spt = json.loads(
        evolve("eval", new, new / "baselines" / "spt", "--split", "train", "--json").stdout
    )
    assert seed["status"] == spt["status"] == "ok", (seed, spt)
    # the baseline changes one module (shortest processing time first): a better order
    assert spt["score"] > seed["score"] and spt["metrics"]["mean_completion"] > 0


def test_bad_file_counts_are_one_line(tmp_path):
    for n, says in (("0", "expected an integer >= 1"), ("64", "from 1 to 63"), ("x", "integer")):
        r = evolve("new", tmp_path / f"bad{n}", "--files", n)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
        assert not (tmp_path / f"bad{n}").exists()


@pytest.mark.parametrize("files", ["1", "2"])
def test_the_readmes_command_works_from_where_evolve_new_ran(tmp_path, files):
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "evolve.cli", *args], cwd=tmp_path, env=env(),
                              capture_output=True, text=True, timeout=240)  # fmt: skip

    assert cli("new", "problems/mine", "--files", files).returncode == 0
    readme = " ".join((tmp_path / "problems" / "mine" / "README.md").read_text().split())
    (command,) = re.findall(r"`(evolve eval [^`]+)`", readme)
    r = cli(*command.split()[1:])
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr[-2000:]
