"""`evolve check`: validate a problem folder, say what evolve made of it, score its seed
(evolve.pipeline.api.check; the report's lines are evolve/problem/check.py's)."""

from __future__ import annotations

from evolve.cli.common import UsageError, given
from evolve.cli.safe_text import safe_text
from evolve.settings.flags import CHECK


def cmd_check(args) -> int:
    from evolve.pipeline import api

    report = api.check(
        args.problem_dir, say=lambda line: print(safe_text(line)), **given(args, CHECK)
    )
    if not report.ok:
        raise UsageError(f"{report.problem.seed_file}: the seed program does not evaluate cleanly")
    print("ok")
    return 0
