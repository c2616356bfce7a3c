"""Render prompts from Jinja2 templates (prompts/, overridable per problem).

StrictUndefined makes a template that names a missing variable fail loudly
at the first render instead of silently sending the model an empty hole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from evolve.population import Attempt
from evolve.problem import Problem

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
EDIT_FORMATS = ("diff", "block", "full")


@dataclass(frozen=True)
class ShownProgram:
    """A program as a prompt shows it."""

    code: str
    score: float | None
    metrics: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PromptContext:
    parent: ShownProgram
    edit_format: str  # diff | block | full | crossover
    inspirations: list[ShownProgram] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    second: ShownProgram | None = None


class PromptBuilder:
    def __init__(self, problem: Problem):
        self.problem = problem
        search = [str(problem.prompt_dir)] if problem.prompt_dir.is_dir() else []
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([*search, str(PROMPTS_DIR)]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            autoescape=False,
        )

    def build(self, ctx: PromptContext) -> list[dict]:
        system = self.env.get_template("system.j2").render(problem=self.problem)
        user = self.env.get_template(f"{ctx.edit_format}.j2").render(
            problem=self.problem, parent=ctx.parent, inspirations=ctx.inspirations,
            attempts=ctx.attempts, second=ctx.second,
        )
        return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]
