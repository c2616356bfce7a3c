"""Named sets of problems for `evolve bench`: `evolve bench adrs` runs the seven problems the
published ADRS comparisons use (the ADRS leaderboard; LEVI's table), so one command gives a
table to set beside theirs.

A name is read as a suite only where no folder of that name exists, so a user's own folder
called `adrs` is still a problem folder. Suites name folders of the problem library that
ships in a clone: `./problems` when it has them all, else `problems/` beside the package; an
installation without either says so in one line.
"""

from __future__ import annotations

from pathlib import Path

PROBLEMS = Path(__file__).resolve().parents[2] / "problems"

SUITES: dict[str, tuple[str, ...]] = {
    # the ADRS leaderboard's seven, in its order: spot single-region, spot multi-region,
    # LLM-SQL, cloudcast, prism, EPLB, transaction scheduling
    "adrs": (
        "spot_scheduling",
        "spot_multi_region",
        "llm_sql",
        "cloudcast",
        "prism",
        "eplb",
        "txn_scheduling",
    ),
}


class SuiteError(ValueError):
    """A suite whose folders this installation does not have."""


def expand(args: list[str] | tuple[str, ...]) -> list[str]:
    """PROBLEM_DIR arguments with each suite name replaced by its folders, in order."""
    out: list[str] = []
    for arg in args:
        if arg not in SUITES or Path(arg).exists():
            out.append(arg)
            continue
        names = SUITES[arg]
        library = next((d for d in (Path("problems"), PROBLEMS) if _has(d, names)), None)
        if library is None:
            lacking = [n for n in names if not (PROBLEMS / n).is_dir()]
            raise SuiteError(
                f"suite {arg!r} needs the problem library's {', '.join(lacking)} under "
                f"./problems or {PROBLEMS} (run from a clone of the repository)"
            )
        out += [str(library / name) for name in names]
    return out


def _has(library: Path, names: tuple[str, ...]) -> bool:
    return all((library / n / "problem.toml").is_file() for n in names)
