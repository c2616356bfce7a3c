"""The documentation: README.md stays a short guide, the MkDocs site under docs/ builds with
`--strict`, every relative link of README.md and the pages resolves, and the generated
reference pages (the command line, problem.toml's keys) are those the code gives now."""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = sorted(DOCS.rglob("*.md"))


def _reference():
    """docs/hooks/reference.py, the generator of the reference pages (and MkDocs hook)."""
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _links(text: str) -> list[str]:
    """The targets of the Markdown links and images in `text`, code left out."""
    text = re.sub(r"(?ms)^ *(```|~~~).*?^ *\1", "", text)  # fenced blocks
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)


def test_the_readme_is_a_guide_of_at_most_250_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"
    assert not any(
        line.startswith("| ") and "normalised" in line for line in lines
    )  # no race table


def test_the_readme_keeps_the_two_set_up_commands_and_ci_runs_the_second():
    readme = README.read_text()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert f"```bash\n{ci}\n```" in readme, ".ci/run runs exactly the README's test command"
    install = "-e '.[local]' && .venv/bin/evolve run problems/binpack --iterations 20"
    assert re.search(r"(?m)^python3 -m venv \.venv && .*" + re.escape(install) + "$", readme)


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file(page):
    missing = []
    for target in _links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor of the page itself
        path = target.split("#", 1)[0]
        if not (page.parent / path).exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)}: links to missing files: {missing}"


def test_the_generated_reference_pages_are_current():
    assert _reference().stale() == [], "run: python docs/hooks/reference.py"


def test_the_cli_page_covers_every_command_and_flag():
    reference = _reference()
    page = (DOCS / "reference" / "cli.md").read_text()
    commands = reference.commands(build_parser())
    names = {name for name, _, _ in commands}
    assert {"evolve run", "evolve archive export", "evolve sandbox build", "evolve bench"} <= names
    for name, parser, _ in commands:
        assert re.search(rf"(?m)^#+ `{re.escape(name)}`$", page), f"no section for {name}"
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for option in action.option_strings:
                assert option in page, f"{name}: {option} is not on the page"


def test_the_site_builds_with_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[test]')")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    site = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-q",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(site),
        ],
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cli = (site / "reference" / "cli" / "index.html").read_text()
    assert "evolve archive export" in cli and "--budget-usd" in cli
    keys = (site / "reference" / "problem-toml" / "index.html").read_text()
    assert "timeout_s" in keys and "[[data]] sha256" in keys
    for page in PAGES:
        rel = page.relative_to(DOCS).with_suffix("")
        if rel.parts[0] == "hooks":
            continue
        built = site / ("index.html" if rel.name == "index" else rel / "index.html")
        assert built.is_file(), f"{page.relative_to(ROOT)} was not built"
    assert "fonts.googleapis.com" not in (site / "index.html").read_text()  # builds, reads offline
