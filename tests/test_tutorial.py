"""docs/guide/writing-an-evaluator.md builds a problem from an empty folder. Every file it
shows (a code block with a `title`) is written where its title says, every command it runs
is run as a reader would run it (the real CLI, the local sandbox), and what each prints must
be what the page quotes: the scores, the metrics, the errors, the hash. Files and numbers are
read from the page, so the page and this test cannot drift apart."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evolve.testing.cli_helpers import env

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guide" / "writing-an-evaluator.md"
FENCE = re.compile(r'(?ms)^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$')


def _files(text: str) -> dict[str, str]:
    """Each titled code block: its path and its text."""
    return {title: body for _, title, body in FENCE.findall(text) if title}


def _commands(text: str) -> list[tuple[str, str]]:
    """Each `$ command` of the console blocks with the output the page shows under it."""
    out: list[tuple[str, str]] = []
    for lang, _, body in FENCE.findall(text):
        if lang != "console":
            continue
        for chunk in re.split(r"(?m)^\$ ", body)[1:]:
            command, _, shown = chunk.partition("\n")
            out.append((command, shown))
    return out


def _run(command: str, folder: Path) -> str:
    """What `command` prints, run in `folder` (after its `cd X &&`, if any)."""
    if m := re.fullmatch(r"cd (\S+) && (.*)", command):
        folder, command = folder / m[1], m[2]
    argv = shlex.split(command)
    if argv[0] == "sha256sum":  # coreutils' line, from Python (macOS has no sha256sum)
        return f"{hashlib.sha256((folder / argv[1]).read_bytes()).hexdigest()}  {argv[1]}\n"
    if argv[0] == "evolve":
        argv = [sys.executable, "-m", "evolve.cli", *argv[1:], "--sandbox", "local"]
    else:
        assert argv[0] == "python", command
        argv = [sys.executable, *argv[1:]]
    r = subprocess.run(argv, cwd=folder, env=env(), capture_output=True, text=True, timeout=240)
    return r.stdout + r.stderr


def _json(output: str) -> dict:
    """The line `evolve eval --json` prints (lines above it: notices, such as the sandbox's)."""
    return json.loads(next(line for line in output.splitlines()[::-1] if line.startswith("{")))


def _facts(command: str, output: str) -> list:
    """What must not change in a command's output: scores, statuses, errors; all of it for
    a command other than `evolve check` or `evolve eval` (timings and paths differ)."""
    if command.startswith("evolve check"):
        return re.findall(r"seed on ([^:]+): (\w+), score (\S+),", output)
    if command.startswith("evolve eval") and "--json" in command:
        got = _json(output)
        error = got.get("artifacts", {}).get("error")
        return [got["status"], got["score"], got["metrics"], error]
    if command.startswith("evolve eval"):  # the table: its title and score rows
        title = re.findall(r"(?m)^ *(\w+: \w+) *$", output)
        return [*title, *re.findall(r"│ (score|weighted_completion) +│ (\S+) +│", output)]
    return [output.strip()]


def test_the_tutorial_builds_its_problem_and_gets_the_numbers_it_quotes(tmp_path):
    text = PAGE.read_text()
    files = _files(text)
    folder = "problems/wsched/"
    needed = ("make_data.py", "data/SOURCES.md", "seed.py", "evaluator.py", "problem.toml")
    assert {folder + name for name in needed} <= set(files), sorted(files)
    assert any(name.startswith(folder + "baselines/") for name in files)
    for name, body in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)

    # what the page runs; a run needs a model server, so the page's run is checked apart
    commands = [
        (c, shown) for c, shown in _commands(text) if not c.startswith(("evolve run", "python -m"))
    ]
    assert [c for c, _ in commands][0] == "python problems/wsched/make_data.py"  # data first
    setup = [(c, shown) for c, shown in commands if not c.startswith("evolve")]
    evolve = [(c, shown) for c, shown in commands if c.startswith("evolve")]
    assert {c.split()[1] for c, _ in evolve} == {"check", "eval"} and len(evolve) >= 5
    for command, shown in setup:  # in order: the later ones read the data the first writes
        assert _run(command, tmp_path).strip() == shown.strip(), command
    with ThreadPoolExecutor(max_workers=3) as pool:  # independent of each other
        outputs = list(pool.map(lambda c: _run(c[0], tmp_path), evolve))
    for (command, shown), output in zip(evolve, outputs, strict=True):
        expected = _facts(command, shown)
        assert expected, f"the page shows no score for {command}"
        assert _facts(command, output) == expected, f"{command}\n{output[-3000:]}"


def test_the_runs_numbers_are_the_pages_scores():
    """The run's output is quoted, not rerun (it needs a model server): its seed and its best
    (the canned reply, Smith's rule) are the scores `evolve eval` gives them on the page."""
    text = PAGE.read_text()
    shown = dict(_commands(text))
    run = next(out for c, out in shown.items() if c.startswith("evolve run"))
    best, seed = map(float, re.search(r"best (\S+) \(seed (\S+)\)", run).groups())

    def train(program: str) -> float:
        if program == "seed.py":  # the page scores the seed's train split with `evolve check`
            check = shown["evolve check problems/wsched"]
            return float(re.search(r"seed on train: ok, score (\S+),", check)[1])
        return _json(shown[f"evolve eval problems/wsched problems/wsched/{program} --json"])[
            "score"
        ]

    assert (best, seed) == (round(train("baselines/wspt.py"), 3), round(train("seed.py"), 3))
    # the table of weighted completion times quotes the same evaluations
    for program in ("seed.py", "baselines/fifo.py", "baselines/wspt.py"):
        row = re.search(rf"(?m)^\| `{re.escape(program)}`[^|]*\| (\S+) \| (\S+) \|$", text)
        test = f"evolve eval problems/wsched problems/wsched/{program} --split test --json"
        on_test = _json(shown[test])["score"]
        assert row and row.groups() == (f"{-train(program):.2f}", f"{-on_test:.2f}"), program
    reply = json.loads(_files(text)["replies.json"])[0]["content"]
    assert _files(text)["problems/wsched/baselines/wspt.py"].strip() in reply
