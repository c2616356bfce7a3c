"""ArchiveReader's queries over a run's LLM calls and what the search made of them: the
calls, their outcomes and counts, each model's use, the meta-notes and the search's
decisions. Read-only, like every query of the reader (evolve/archive/readonly.py).
"""

from __future__ import annotations

from evolve.archive import queries
from evolve.archive.readonly import ReadOnlyArchive, columns, v4_cols
from evolve.archive.rows import CallOutcome, LlmCall, ProgramRow, ProgramStatus, member, row_to_call
from evolve.archive.summaries import AnsweredCall, CallCounts, MetaNote, ModelUse, SearchDecision
from evolve.archive.vocab import CallPurpose, ProgramKind


class CallQueries(ReadOnlyArchive):
    """The LLM-call half of ArchiveReader (evolve/archive/reader.py), which adds the runs,
    the programs and the benchmarks."""

    # ---- LLM calls --------------------------------------------------------------
    def llm_call(self, call_id: int) -> LlmCall | None:
        with self._db() as db:
            r = db.execute("SELECT * FROM llm_calls WHERE call_id = ?", (call_id,)).fetchone()
        return row_to_call(r) if r is not None else None

    def llm_calls(self, run_id: str, prompts: bool = False) -> list[LlmCall]:
        """A run's calls in order; prompts and replies only when asked (they are large)."""
        with self._db() as db:
            cols = (
                "*"
                if prompts
                else "call_id, run_id, iteration, island, parent_id, second_parent_id, model,"
                " edit_format, '[]' AS prompt_json, NULL AS reply, error, prompt_tokens,"
                " completion_tokens, cost_usd, latency_s, created_at, " + ", ".join(v4_cols(db))
            )
            rows = db.execute(
                f"SELECT {cols} FROM llm_calls WHERE run_id = ? ORDER BY call_id", (run_id,)
            ).fetchall()
        return [row_to_call(r) for r in rows]

    # ---- what the search did (schema 4; an older archive has none of it) ----------------
    def rejected_calls(self, run_id: str, iteration: int) -> list[LlmCall]:
        """The answered calls of one iteration whose reply was not used (it repeated a
        program, so the model was asked again), with prompts and replies, in order."""
        with self._db() as db:
            if "outcome" not in columns(db, "llm_calls"):
                return []
            rows = db.execute(
                "SELECT * FROM llm_calls WHERE run_id = ? AND iteration = ?"
                " AND outcome IS NOT NULL ORDER BY call_id",
                (run_id, iteration),
            ).fetchall()
        return [row_to_call(r) for r in rows]

    def meta_notes(self, run_id: str) -> list[MetaNote]:
        """A run's meta-notes in the order they were written."""
        with self._db() as db:
            return queries.meta_notes(db, run_id)

    def decisions(self, run_id: str) -> list[SearchDecision]:
        """A run's search decisions (stagnation bursts, island restarts) in order."""
        with self._db() as db:
            return queries.decisions(db, run_id)

    def call_counts(self, run_id: str) -> CallCounts:
        """What became of a run's LLM calls, and how many programs repairs made."""
        with self._db() as db:
            has = columns(db, "llm_calls")
            purpose = "purpose" if "purpose" in has else "NULL"
            outcome = "outcome" if "outcome" in has else "NULL"
            rows = db.execute(
                f"""SELECT reply IS NOT NULL AS answered, {purpose} AS purpose,
                      {outcome} AS outcome, COUNT(*) AS n
                    FROM llm_calls WHERE run_id = ? GROUP BY 1, 2, 3""",
                (run_id,),
            ).fetchall()
            rep = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status = ?), 0) FROM programs"
                " WHERE run_id = ? AND kind = 'repair'",
                (ProgramStatus.OK, run_id),
            ).fetchone()
        by_purpose: dict[str, int] = {}
        by_outcome: dict[str, int] = {}
        answered = failed = rejected = 0
        for r in rows:
            n = int(r["n"])
            if not r["answered"]:
                failed += n
                by_outcome["failed attempt"] = by_outcome.get("failed attempt", 0) + n
                continue
            answered += n
            key = r["purpose"] if r["purpose"] is not None else "not recorded"
            by_purpose[key] = by_purpose.get(key, 0) + n
            what = r["outcome"] if r["outcome"] is not None else "used"
            by_outcome[what] = by_outcome.get(what, 0) + n
            rejected += n if r["outcome"] == CallOutcome.REJECTED_DUPLICATE else 0
        return CallCounts(answered, failed, rejected, int(rep[0]), int(rep[1]),
                          by_purpose, by_outcome)  # fmt: skip

    def model_use(self, run_id: str) -> list[ModelUse]:
        """Per model, by name: its calls, tokens and the bandit's reward proxy."""
        with self._db() as db:
            has = columns(db, "llm_calls")
            meta = "COALESCE(purpose, '') = 'meta'" if "purpose" in has else "edit_format = 'meta'"
            outcome = "outcome IS NOT NULL" if "outcome" in has else "0"
            rows = db.execute(
                f"""SELECT model, COUNT(reply) AS calls, SUM(reply IS NULL) AS failed,
                      SUM(reply IS NOT NULL AND {outcome}) AS rejected,
                      SUM(prompt_tokens + completion_tokens) AS tokens,
                      SUM(cost_usd) AS cost_usd,
                      SUM(reply IS NOT NULL AND NOT ({meta})) AS proposals
                    FROM llm_calls WHERE run_id = ? GROUP BY model ORDER BY model""",
                (run_id,),
            ).fetchall()
            improved = dict(
                db.execute(
                    """SELECT c.model, COUNT(*) FROM programs c
                       JOIN programs p ON p.program_id = c.parent_id
                       WHERE c.run_id = ? AND c.iteration > 0 AND c.status = ?
                         AND c.score IS NOT NULL AND p.score IS NOT NULL AND c.score > p.score
                         AND c.model IS NOT NULL
                       GROUP BY c.model""",
                    (run_id, ProgramStatus.OK),
                ).fetchall()
            )
        total = sum(int(r["calls"]) for r in rows)
        return [
            ModelUse(
                model=r["model"],
                calls=int(r["calls"]),
                failed=int(r["failed"] or 0),
                rejected=int(r["rejected"] or 0),
                tokens=int(r["tokens"] or 0),
                cost_usd=float(r["cost_usd"] or 0.0),
                proposals=int(r["proposals"] or 0),
                improved=int(improved.get(r["model"], 0)),
                share=int(r["calls"]) / total if total else None,
            )
            for r in rows
        ]

    def proposal(self, p: ProgramRow) -> dict:
        """How a program was proposed, as `archive show --json` and the web API say it: its
        call's purpose, temperature and decision, the failed parent it repairs, and the
        replies of its iteration rejected before it (model text: shown as text)."""
        call = self.llm_call(p.llm_call_id) if p.llm_call_id is not None else None
        rejected = self.rejected_calls(p.run_id, p.iteration) if p.iteration > 0 else []
        return {
            "call_id": call.call_id if call else None,
            "purpose": call.purpose if call else None,
            "temperature": call.temperature if call else None,
            "decision": call.decision if call else None,
            "repair_of": p.parent_id if p.kind == ProgramKind.REPAIR else None,
            "rejected_calls": [
                {
                    "call_id": c.call_id,
                    "model": c.model,
                    "purpose": c.purpose,
                    "temperature": c.temperature,
                    "decision": c.decision,
                    "outcome": c.outcome,
                    "reply": c.reply,
                }
                for c in rejected
            ],
        }

    def run_counts(self) -> dict[str, dict[str, int]]:
        """Per run: its answered LLM calls (`calls`), the rejected ones and its repairs."""
        with self._db() as db:
            outcome = "outcome IS NOT NULL" if "outcome" in columns(db, "llm_calls") else "0"
            calls = db.execute(
                f"""SELECT run_id, COUNT(reply) AS calls,
                      COALESCE(SUM(reply IS NOT NULL AND {outcome}), 0) AS rejected
                    FROM llm_calls GROUP BY run_id"""
            ).fetchall()
            repairs = dict(
                db.execute(
                    "SELECT run_id, COUNT(*) FROM programs WHERE kind = 'repair' GROUP BY run_id"
                ).fetchall()
            )
            run_ids = [r[0] for r in db.execute("SELECT run_id FROM runs")]
        out = {r: {"calls": 0, "rejected": 0, "repairs": int(repairs.get(r, 0))} for r in run_ids}
        for r in calls:
            if r["run_id"] in out:
                out[r["run_id"]].update(calls=int(r["calls"]), rejected=int(r["rejected"]))
        return out

    def answered_calls(self, run_id: str) -> list[AnsweredCall]:
        """A run's answered calls in the order they were answered (failed attempts left out),
        each with the program its reply became, if any."""
        with self._db() as db:
            cols = {r[1] for r in db.execute("PRAGMA table_info(llm_calls)")}
            outcome = "c.outcome" if "outcome" in cols else "NULL"
            rows = db.execute(
                f"""SELECT c.call_id, {outcome} AS outcome,
                      c.prompt_tokens + c.completion_tokens AS tokens, p.status, p.code_hash,
                      p.score, p.test_score, p.created_at
                    FROM llm_calls c LEFT JOIN programs p
                      ON p.run_id = c.run_id AND p.llm_call_id = c.call_id
                    WHERE c.run_id = ? AND c.reply IS NOT NULL
                    GROUP BY c.call_id ORDER BY c.call_id""",
                (run_id,),
            ).fetchall()
        return [
            AnsweredCall(
                **{
                    **dict(r),
                    "outcome": r["outcome"] and member(CallOutcome, r["outcome"]),
                    "status": r["status"] and member(ProgramStatus, r["status"]),
                }
            )
            for r in rows
        ]

    def tokens(self, run_id: str) -> int:
        """Prompt and completion tokens of every call of a run, failed attempts included."""
        with self._db() as db:
            r = db.execute(
                "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM llm_calls"
                " WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return int(r[0])

    def agent_turns(self, run_id: str, iteration: int) -> list[LlmCall]:
        """The answered turns of an agent iteration, in order (queries.agent_turns)."""
        with self._db() as db:
            return queries.agent_turns(db, run_id, iteration)

    def run_agent_turns(self, run_id: str) -> dict[int, list[LlmCall]]:
        """Every agent iteration's answered turns of a run, by iteration, in order."""
        with self._db() as db:
            if "purpose" not in columns(db, "llm_calls"):
                return {}
            rows = db.execute(
                "SELECT * FROM llm_calls WHERE run_id = ? AND purpose = ?"
                " AND reply IS NOT NULL AND outcome IS NULL ORDER BY call_id",
                (run_id, CallPurpose.AGENT),
            ).fetchall()
        out: dict[int, list[LlmCall]] = {}
        for r in rows:
            c = row_to_call(r)
            out.setdefault(c.iteration, []).append(c)
        return out
