"""What a run did with its calls, by one set of definitions for every framework.

The definitions are evolve's own (evolve/benchmark/measure.py): a program is new when its
normalised code hash (evolve.edits.apply.normalized_hash: comments, docstrings, blank lines
and formatting ignored) was not evaluated before in the run, the seed included; it is
behaviourally new when it is valid and its train score, to 12 significant digits, is one no
earlier program of the run had. For a peer the run's candidates are the lines of the race's
evaluation log (every candidate it evaluated, through bench/race/peer_side/scorer.py); for evolve,
its archive's answered calls and the programs they became.
"""

from __future__ import annotations

import math
import sqlite3
import statistics
from pathlib import Path

from evolve.agent import transcript
from evolve.archive.reader import ArchiveReader
from evolve.benchmark.measure import score_key
from evolve.edits.apply import normalized_hash


def yields(items: list[dict], seed_hash: str, seed_train: float | None) -> dict:
    """Counts over a run's items: new programs, behaviourally new programs, valid programs."""
    seen_hashes = {seed_hash}
    seen_scores = {score_key(seed_train)} if seed_train is not None else set()
    new = behaviour = valid = 0
    for it in items:
        if it["hash"] is not None and not it.get("clone"):
            new += it["hash"] not in seen_hashes
            seen_hashes.add(it["hash"])
        if it["valid"]:
            valid += 1
            key = score_key(it["score"])
            behaviour += key not in seen_scores
            seen_scores.add(key)
    return {"new_programs": new, "behaviourally_new": behaviour, "valid": valid}


def call_stats(calls: list[dict]) -> dict:
    lat = [c["latency_s"] for c in calls]
    return {
        "calls": len(calls),
        "prompt_tokens": sum(c["prompt_tokens"] for c in calls),
        "completion_tokens": sum(c["completion_tokens"] for c in calls),
        "median_latency_s": statistics.median(lat) if lat else None,
    }


# ---- peers: the race's evaluation log ---------------------------------------------------
def from_eval_log(rows: list[dict], seed_code: str, seed_train: float) -> tuple[list[dict], str, float]:
    """(items, best code, best train score) of a peer's run. The peer evaluates the seed
    before its first call: a first line with the seed's code is that, not a candidate."""
    seed_hash = normalized_hash(seed_code)
    if rows and normalized_hash(rows[0]["code"]) == seed_hash:
        rows = rows[1:]
    items, best_code, best = [], seed_code, seed_train
    for r in rows:
        ok = bool(r["valid"]) and r["score"] is not None and math.isfinite(r["score"])
        items.append({"hash": normalized_hash(r["code"]), "valid": ok,
                      "score": r["score"] if ok else None, "clone": False})
        if ok and r["score"] > best:
            best_code, best = r["code"], r["score"]
    return items, best_code, best


# ---- evolve: its archive ----------------------------------------------------------------
def from_archive(db_path: Path, run_id: str) -> dict:
    """calls, items, seed train score, best code and train score of one `evolve run`."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute(
            """SELECT c.call_id, c.outcome, c.prompt_tokens, c.completion_tokens, c.latency_s,
                      p.status, p.code_hash, p.score
               FROM llm_calls c LEFT JOIN programs p
                 ON p.run_id = c.run_id AND p.llm_call_id = c.call_id
               WHERE c.run_id = ? AND c.reply IS NOT NULL
               GROUP BY c.call_id ORDER BY c.call_id""", (run_id,)).fetchall()
        seed = db.execute("SELECT code, score FROM programs WHERE run_id = ? AND iteration = 0",
                          (run_id,)).fetchone()
        evaluations = db.execute(
            "SELECT COUNT(*) FROM programs WHERE run_id = ? AND iteration > 0 AND eval_s IS NOT NULL",
            (run_id,)).fetchone()[0]
        best = db.execute(
            """SELECT code, score FROM programs WHERE run_id = ? AND status = 'ok'
               AND score IS NOT NULL ORDER BY score DESC, iteration ASC LIMIT 1""",
            (run_id,)).fetchone()
    finally:
        db.close()
    agent_evals = transcript.run_counts(ArchiveReader(db_path.parent), run_id).evaluations
    calls = [{"latency_s": r["latency_s"], "prompt_tokens": r["prompt_tokens"],
              "completion_tokens": r["completion_tokens"]} for r in rows]
    items = [{"hash": r["code_hash"], "valid": r["status"] == "ok" and r["score"] is not None,
              "score": r["score"],
              "clone": r["outcome"] == "rejected_duplicate" or r["status"] == "duplicate"}
             for r in rows]
    return {"calls": calls, "items": items, "evaluations": evaluations, "agent_evals": agent_evals,
            "seed_train": seed["score"] if seed else None,
            "best_code": best["code"] if best else (seed["code"] if seed else ""),
            "best_train": best["score"] if best else None}
