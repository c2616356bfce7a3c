"""The type of a `tools` entry (problem.toml [evaluation] tools, config.yaml evolve.tools):
a program's name as the evaluator runs it, looked up on PATH, never a path."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

Tool = Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$", max_length=64)]
