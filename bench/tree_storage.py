"""Archive size of programs of several files: stored by content against stored whole (issue 38).

    .venv/bin/python bench/tree_storage.py [--programs 1000] [--seed 0]

Writes the same `--programs` programs, a 5-file tree each (the seeds of five problems as its
files, ~20 KB), into two real archives in the same run:
  - content-addressed: `Archive.insert_program`, as every run stores a tree (evolve/archive/
    trees.py: each file's text once, per program its list of paths);
  - whole: the same rows with each tree's whole text in `programs.code`, as schema 6 stored it.
As evolution makes them, each child takes a parent among the programs so far and changes one
of its files (a few lines of it: a constant, a line added, a line removed), and each row carries
the unified diff to its parent that the loop stores (`--no-diff`: none, the code alone). Both
archives are read back and checked against what was written, then checkpointed and vacuumed;
it prints their sizes and the ratio, and writes bench/results/tree_storage.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402

from evaluators import tree  # noqa: E402
from evolve.archive import Archive, ProgramRow  # noqa: E402
from evolve.archive.rows import insert_statement  # noqa: E402
from evolve.edits import unified_diff  # noqa: E402

FILES = {  # tree path -> the problem seed that is its text
    "policy/__init__.py": "llm_serving",
    "policy/transfers.py": "cloudcast",
    "policy/mapping.py": "soc_scheduling",
    "policy/prefix.py": "llm_sql",
    "policy/memory.py": "memory_mapping",
}


def seed_tree() -> dict[str, str]:
    return {path: (ROOT / "problems" / p / "seed.py").read_text() for path, p in FILES.items()}


def mutate(files: dict[str, str], rng: random.Random, n: int) -> dict[str, str]:
    """`files` with one file changed by a few lines, as one LLM edit changes a tree."""
    path = rng.choice(list(files))
    lines = files[path].split("\n")
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(1, len(lines))
        what = rng.random()
        if what < 0.4:
            lines.insert(at, f"    tuned_{n}_{at} = {rng.random():.6f}  # an idea of child {n}")
        elif what < 0.7 and len(lines) > 20:
            del lines[at]
        else:
            lines[at] = lines[at].replace("1", str(rng.randint(2, 9)), 1) + f"  # v{n}"
    return {**files, path: "\n".join(lines)}


def programs(n: int, seed: int, with_diff: bool) -> list[ProgramRow]:
    rng = random.Random(seed)
    trees = [seed_tree()]
    rows = [ProgramRow("b:0", "b", "trees", 0, 0, "ok", code=tree.encode(trees[0]), kind="seed",
                       score=0.0, metrics={"latency": 1.0})]  # fmt: skip
    for it in range(1, n):
        parent = rng.randrange(len(trees))  # any program so far, as the islands pick
        child = mutate(trees[parent], rng, it)
        trees.append(child)
        code = tree.encode(child)
        diff = unified_diff(rows[parent].code or "", code) if with_diff else None
        rows.append(ProgramRow(f"b:{it}", "b", "trees", it, it % 4, "ok", code=code, diff=diff,
                               parent_id=f"b:{parent}", score=rng.random(),
                               metrics={"latency": rng.random()}))  # fmt: skip
    return rows


def write(runs: Path, rows: list[ProgramRow], by_content: bool) -> int:
    """The archive's size in bytes once written, read back and checked, and compacted."""
    a = Archive(runs)
    try:
        a.create_run("b", "trees", str(ROOT), {}, len(rows))
        for p in rows:
            if by_content:
                a.insert_program(p)
            else:
                with a.tx() as db:
                    db.execute(*insert_statement(p, p.code, 0))
        back = a.programs("b", code=True)
        assert [p.code for p in back] == [p.code for p in rows], "read back differs"
        stored = a.db.execute("SELECT SUM(code_files > 0) FROM programs").fetchone()[0]
        assert stored == (len(rows) if by_content else 0)
    finally:
        a.close()
    db = sqlite3.connect(runs / "archive.db")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.close()
    return sum(f.stat().st_size for f in runs.glob("archive.db*"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-diff", action="store_true", help="rows without the loop's diff")
    args = ap.parse_args()
    load_start = os.getloadavg()
    rows = programs(args.programs, args.seed, not args.no_diff)
    text = sum(len((p.code or "").encode()) for p in rows)
    work = Path(tempfile.mkdtemp(prefix="tree_storage."))
    try:
        by_content = write(work / "content", rows, True)
        whole = write(work / "whole", rows, False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "programs": args.programs,
        "files_per_tree": len(FILES),
        "tree_kb": round(len(rows[0].code.encode()) / 1024, 1),  # type: ignore[union-attr]
        "diffs_stored": not args.no_diff,
        "code_text_mb": round(text / 2**20, 2),
        "content_addressed_mb": round(by_content / 2**20, 2),
        "whole_mb": round(whole / 2**20, 2),
        "ratio_whole_to_content": round(whole / by_content, 2),
        "machine": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },
    }
    print(
        f"{args.programs} programs of a {len(FILES)}-file tree ({result['tree_kb']} KB;"
        f" each child changes one file; diffs {'stored' if not args.no_diff else 'not stored'}):"
        f" {result['code_text_mb']} MB of code text"
    )
    print(f"  content-addressed archive: {result['content_addressed_mb']:8.2f} MB")
    print(f"  each tree stored whole:    {result['whole_mb']:8.2f} MB")
    print(f"  whole / content-addressed: {result['ratio_whole_to_content']:8.2f}x")
    out = result_path("tree_storage" + ("_nodiff" if args.no_diff else ""))
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
