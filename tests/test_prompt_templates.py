"""Where a prompt's text comes from: the packaged templates (the repository's prompts/
folder, which the wheel carries as evolve.prompt_templates) and a problem folder's own prompts/, which overrides any of them
by name, in every prompt style."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evolve import prompt_templates
from evolve.problem.load import load_problem
from evolve.search.prompts import TEMPLATES_DIR, PromptBuilder, PromptContext, ShownProgram
from evolve.testing.cli_helpers import BINPACK, ROOT

PROBLEM = load_problem(BINPACK)


def _ctx(fmt: str = "diff") -> PromptContext:
    return PromptContext(parent=ShownProgram(PROBLEM.seed_code, -4.2), edit_format=fmt)


def test_the_packaged_templates_are_the_prompts_folder_installed_under_evolve():
    assert TEMPLATES_DIR == Path(prompt_templates.__file__).resolve().parent == ROOT / "prompts"
    names = {p.name for p in TEMPLATES_DIR.glob("*.j2")}
    for fmt in ("system", "diff", "block", "full", "crossover", "funsearch", "repair", "meta"):
        assert f"{fmt}.j2" in names, fmt
    assert {"system_short.j2", "block_short.j2", "crossover_short.j2"} <= names
    assert not (ROOT / "evolve" / "templates").exists()  # one home for them


def test_a_problems_own_template_overrides_the_packaged_one(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.j2").write_text("OWN system prompt for {{ problem.name }}\n")
    own = replace(PROBLEM, root=tmp_path)
    packaged = PromptBuilder(PROBLEM).render(_ctx())
    system, user = PromptBuilder(own).render(_ctx())
    assert system["content"] == f"OWN system prompt for {PROBLEM.name}"
    assert user == packaged[1]  # what the problem does not override comes from the package
    assert "priority" in user["content"]

    # short prompts: the problem's own system.j2 wins over the packaged system_short.j2
    short = PromptBuilder(PROBLEM, style="short").render(_ctx("block"))
    assert short[0]["content"] not in (packaged[0]["content"], system["content"])
    assert PromptBuilder(own, style="short").render(_ctx("block"))[0] == system


def test_the_short_prompt_names_a_failed_siblings_status_not_its_error():
    from evolve.archive import ProgramStatus
    from evolve.search.population import Attempt

    attempts = [
        Attempt(
            1, ProgramStatus.RUNTIME_ERROR, None, "NameError: name 'scipy_thing' is not defined"
        ),
        Attempt(
            2, ProgramStatus.DUPLICATE, None, "repeated an earlier program: write a different one"
        ),
    ]
    ctx = replace(_ctx("block"), attempts=attempts)
    short = PromptBuilder(PROBLEM, style="short").render(ctx)[1]["content"]
    assert "- runtime_error\n" in short and "scipy_thing" not in short
    assert "(repeated an earlier program: write a different one)" in short
    full = PromptBuilder(PROBLEM, style="full").render(ctx)[1]["content"]
    assert "scipy_thing" in full  # larger models keep the error text


def test_the_domain_notes_and_the_rules_start_lines_of_their_own():
    """trim_blocks ate the newline after the metric's sentence: every system prompt read
    "...(lower is better).Domain notes:" and, without notes, "...is better.Rules:"."""
    from evolve.llm import ModelSpec
    from evolve.pipeline.config import RunConfig

    problem = load_problem(BINPACK)
    for notes in (problem.domain_notes, ""):
        p = replace(problem, domain_notes=notes)
        cfg = RunConfig(models=(ModelSpec("x"),), problem_dir=str(BINPACK))
        built = PromptBuilder.for_config(p, cfg).build(
            PromptContext(parent=ShownProgram(p.seed_code, None), edit_format="diff")
        )
        system = built[0]["content"]
        assert "better).\nDomain notes:\n" in system if notes else "Domain notes" not in system
        assert "\n\nRules:\n" in system if notes else "better).\nRules:\n" in system
