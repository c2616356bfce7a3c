"""The controller's bookkeeping: the run's state (population, search state, counts), rebuilt
from the archive on a start or a resume, each finished program folded into it, and the limits
that stop the run. An iteration's steps (iteration.py) and the loop (controller.py) subclass it:
one object, whose methods lie by concept in three modules.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from evolve.agent.reservations import Reservations
from evolve.archive import Archive, ProgramRow, ProgramStatus
from evolve.archive.vocab import ProgramKind
from evolve.llm import LLMClient
from evolve.pipeline.asking import Asker
from evolve.pipeline.config import RunConfig
from evolve.pipeline.errors import RunAborted
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.pipeline.leaderboard import BestScorer, Leaderboard
from evolve.pipeline.proposal import Proposer
from evolve.pipeline.state import NullObserver, RunObserver, RunStats
from evolve.problem.load import Problem
from evolve.search.meta import parse_notes
from evolve.search.population import Features, Population, SelectionPolicy
from evolve.search.prompts import PromptBuilder
from evolve.search.state import SearchSettings, SearchState
from evolve.search.tune import KIND as TUNED
from evolve.search.tune import Tuner


class Bookkeeping:
    """What one run keeps and how it changes; the Controller (controller.py) is one."""

    def __init__(
        self,
        archive: Archive,
        run_id: str,
        cfg: RunConfig,
        problem: Problem,
        evaluator: CandidateEvaluator,
        llm: LLMClient,
        observer: RunObserver | None = None,
        prompts: PromptBuilder | None = None,
    ):
        self.archive, self.run_id, self.cfg, self.problem = archive, run_id, cfg, problem
        self.evaluator, self.llm = evaluator, llm
        self.observer: RunObserver = observer or NullObserver()
        self.prompts = prompts or PromptBuilder(problem)
        self.features = Features(
            problem.seed_code, problem.feature_dims, problem.feature_bins, problem.fixed_files
        )
        self.pop = Population(cfg.num_islands, SelectionPolicy(), cfg.seed)
        self.proposer = Proposer(
            archive,
            self.pop,
            self.prompts,
            self._program,
            cfg.edit_format,
            cfg.crossover_rate,
            self.observer.note,
        )
        self.search = SearchState(
            SearchSettings(
                {m.name: m.weight for m in cfg.models},
                cfg.temperatures or (cfg.temperature,),
                cfg.repair_attempts,
                cfg.stagnation,
                cfg.burst_calls,
                cfg.escalation_model,
                cfg.seed,
            )
        )
        self.tuner = Tuner(
            cfg.tune_evals if problem.language.is_python else 0, fixed=problem.fixed_files
        )
        self.notes = ""  # the latest meta-notes, shown in every prompt
        self.reserved = Reservations()  # calls kept for agent sessions in flight
        self.replaying = False  # rebuild: decisions are replayed from the archive, not taken
        self.meta_lock = asyncio.Lock()
        self.eval_sem = asyncio.Semaphore(cfg.parallel)
        # the cross-run ranking's data: the seed and each new best scored on it
        self.board = BestScorer(Leaderboard(archive, evaluator), self.eval_sem)
        self.in_flight_hashes: dict[str, str] = {}
        # Replies are parsed here, one at a time: never behind a long evaluation's thread.
        self.parsing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse")
        self.stats = RunStats(target=cfg.iterations)
        self.asker = Asker(
            archive, run_id, llm, cfg.llm_parallel, self.stats, self.observer, self._refresh
        )
        self.last_migration = -1  # `done` at the last ring migration
        self.next_slot = 1  # the next iteration number (set by _loop from the archive)
        self.started = time.monotonic()

    # ---- rebuilt from the archive --------------------------------------------
    def rebuild(self) -> None:
        """Derive the population and the search's state from the archive (fresh start and
        resume alike): programs in order, each island restart where it was taken."""
        resets = [d for d in self.archive.decisions(self.run_id) if d.kind == "stagnation"]
        added = 0
        self.replaying = True
        for p in self.archive.programs(self.run_id, code=True, pending=False):
            while resets and resets[0].at_done <= added:
                self._replay_reset(resets.pop(0).detail)
            self._add(p)
            added += p.iteration > 0 and p.kind != TUNED
        self.replaying = False
        for d in resets:
            self._replay_reset(d.detail)
        for pid, island, _ in self.archive.migrations(self.run_id):
            self.pop.migrate(pid, island)
        rejected = self.archive.rejected_by_model(self.run_id)
        for model in rejected:
            self.search.rejected(model)
        asked = self.archive.repair_parents(self.run_id)
        self.search.repairs = deque(pid for pid in self.search.repairs if pid not in asked)
        self._restore_notes()
        usage = self.archive.usage(self.run_id)
        self.stats.set_usage(usage)
        self.stats.calls = usage["answered"]
        self.stats.rejected = len(rejected)

    def _replay_reset(self, detail: dict) -> None:
        if detail.get("island") is not None and detail.get("from"):
            self.pop.reset_island(int(detail["island"]), str(detail["from"]))

    def _restore_notes(self) -> None:
        """The latest meta-note; a meta reply stored before a kill gets its note now."""
        for call in self.archive.meta_calls(self.run_id):
            if call["text"] is None:
                text = parse_notes(call["reply"])
                self.archive.add_meta_note(self.run_id, self.stats.calls, call["call_id"], text)
                call["text"] = text
            self.notes = call["text"] or self.notes

    # ---- limits --------------------------------------------------------------
    def _calls_left(self) -> int | None:
        """Calls --max-calls still allows, those in flight counted as spent."""
        if self.cfg.max_calls is None:
            return None
        return self.cfg.max_calls - self.stats.calls - self.stats.llm_in_flight

    def _stop_reason(self, calls: bool = True) -> str | None:
        left = self._calls_left()
        if calls and left is not None and left <= 0:
            return f"{self.cfg.max_calls} LLM calls answered (--max-calls)"
        if self.cfg.budget_usd is not None and self.stats.cost_usd >= self.cfg.budget_usd:
            return f"budget of ${self.cfg.budget_usd:g} spent (${self.stats.cost_usd:.4f})"
        if (
            self.cfg.time_limit_s is not None
            and time.monotonic() - self.started >= self.cfg.time_limit_s
        ):
            return f"time limit of {self.cfg.time_limit_s:g} s reached"
        return None

    # ---- a finished program --------------------------------------------------
    def _add(self, row: ProgramRow) -> bool:
        """A finished program into the population, the search's state and the counts; True
        if it is a new best. After a stagnation it restarts the worst island."""
        prev_best = self.pop.best()
        novel = self.pop.novel(row)
        self.pop.add(row)
        self._count(row)
        best = (
            row.status == ProgramStatus.OK
            and row.score is not None
            and (prev_best is None or row.score > prev_best.score)
        )
        parent = self.pop.members.get(row.parent_id or "")
        parent_score = parent.score if parent else None
        self.search.finished(row, parent_score, novel, best, self._depth(row))
        self.tuner.finished(row, parent_score, novel)
        self.stats.tune_left = self.tuner.left()  # counted where the queue changes, not per refresh
        self.stats.novel += novel and row.iteration > 0
        if self.search.stagnant() and not self.replaying:
            self._on_stagnation()
        return best

    def _depth(self, row: ProgramRow) -> int:
        """Repairs in a row that led to row."""
        depth, p = 0, row
        while p.kind == ProgramKind.REPAIR and p.parent_id:
            depth += 1
            parent = self.archive.program(p.parent_id)
            if parent is None:
                break
            p = parent
        return depth

    def _on_stagnation(self) -> None:
        """No new best for --stagnation iterations: a burst of calls on the escalation model
        at the hottest temperature, and the worst island restarted from the best program."""
        self.search.start_burst()
        best = self.pop.selectable_best()
        island = self.pop.worst_island(best.program_id if best else None)
        detail = {
            "model": self.search.escalation_model(),
            "calls": self.cfg.burst_calls,
            "island": island,
            "from": best.program_id if best else None,
            "after": self.cfg.stagnation,
        }
        if island is not None and best is not None:
            self.pop.reset_island(island, best.program_id)
        self.archive.add_decision(self.run_id, self.stats.done, "stagnation", detail)
        restart = (
            f"; island {island} restarted from {best.program_id}"
            if island is not None and best
            else ""
        )
        self.observer.note(
            f"no new best in {self.cfg.stagnation} iterations: {self.cfg.burst_calls} calls on"
            f" {detail['model']}{restart}"
        )

    def _maybe_migrate(self) -> None:
        done = self.stats.done
        interval = self.cfg.migration_interval
        if done == 0 or done % interval or self.last_migration == done:
            return
        self.last_migration = done
        for pid, island in self.pop.migration_plan():
            self.archive.add_migration(self.run_id, pid, island, done)
            self.pop.migrate(pid, island)

    def _count(self, p: ProgramRow) -> None:
        if p.iteration == 0:
            self.stats.seed_score = p.score
        elif p.kind == TUNED:
            self.stats.tuned += 1
        else:
            self.stats.done += 1
            self.stats.ok += p.status == ProgramStatus.OK
        if (
            p.status == ProgramStatus.OK
            and p.score is not None
            and (self.stats.best is None or p.score > self.stats.best)
        ):
            self.stats.best = p.score

    # ---- helpers -------------------------------------------------------------
    def _new_slot(self) -> int:
        self.next_slot += 1
        return self.next_slot - 1

    def _seen(self, code_hash: str) -> str | None:
        """The program of the run (evaluated or in flight) with this code hash, if any."""
        return self.archive.hash_seen(self.run_id, code_hash) or self.in_flight_hashes.get(
            code_hash
        )

    def _refresh(self) -> None:
        self.observer.update(self.stats)

    def _program(self, pid: str) -> ProgramRow:
        """A program the population or a stored reply names: it is in the archive."""
        p = self.archive.program(pid)
        if p is None:
            raise RunAborted(f"program {pid} is not in the archive")
        return p
