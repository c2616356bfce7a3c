"""The Jinja2 prompt templates (system, diff, block, full rewrite, crossover, repair,
FunSearch, meta-notes, and their short variants) that evolve/search/prompts.py renders.

A package, not a bare folder, so an installed wheel carries the templates as package data
and evolve finds them by import wherever it runs. It installs as evolve.prompt_templates
(pyproject.toml's package-dir), never as a top-level `prompts` that a user's own package of
that name would shadow or be shadowed by; a problem folder's own prompts/ overrides
any of them by name.
"""

from pathlib import Path

TEMPLATES_DIR = Path(__file__).resolve().parent  # the .j2 files lie beside this one
