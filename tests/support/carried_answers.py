"""A candidate that carries the public held-out instances' best-known answers (issue 37).

Held-out data that is public can be memorised: a program can hold a table from each public
instance (recognised by what the evaluator hands it) to the best answer known for it, and
answer the rest honestly. Under a run's private data seed the held-out instances are drawn
anew (problems/README.md), so the table finds nothing and the program scores exactly as its
honest part: the tests of cloudcast, dag_scheduling and llm_sql check both halves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.problem_hostile import block_body, with_block


def carrying(problem: Path, fn: str, known: dict, lookup: str, dest: Path) -> Path:
    """A program file (its EVOLVE-BLOCK): the seed's block with `fn` renamed `_honest`, the
    table `known` (JSON-able, string keys) and a new `fn(*args)` returning the table's
    answer, `lookup` (an expression over `args` and `KNOWN`, None when nothing is known),
    or else the honest one."""
    honest, renamed = re.subn(
        rf"^def {fn}\(", "def _honest(", block_body(problem / "seed.py"), flags=re.M
    )
    assert renamed == 1, f"the seed's block defines no {fn}()"
    block = (
        f"import json\n\n{honest}\n\nKNOWN = json.loads({json.dumps(json.dumps(known))})\n\n\n"
        f"def {fn}(*args):\n"
        f"    found = {lookup}\n"
        f"    return _honest(*args) if found is None else found\n"
    )
    return with_block(problem, block, dest)
