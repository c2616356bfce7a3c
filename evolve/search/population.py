"""Islands, a MAP-Elites grid per island, and seeded parent selection.

Derived state only: everything here is rebuilt from archive rows on resume,
so nothing in memory is ever the only copy of what a run learned. Work per
selection is bounded by the grid size, not by the archive's size.

A program can be skipped (its prompt cannot be packed into the model's window,
recorded as the row's skip_reason): it still counts for the best score, but it
is never an elite, so never a parent, a crossover partner, an inspiration or a
migrant.

Programs that behave alike (the same train score and per-instance numbers: FunSearch's
signature) form one cluster, represented by its shortest program; the others are
skipped the same way, so the search stops feeding the model many texts of one behaviour.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from evolve.archive import ProgramRow, ProgramStatus
from evolve.edits.blocks import evolvable_text
from evolve.search.behaviour import signature
from evolve.search.tune import KIND as TUNED

DIVERSITY_CHARS = 16 * 1024  # seed and program together; longer pairs are compared by line


@dataclass(frozen=True)
class SelectionPolicy:
    """Probabilities of the three parent picks; the rest is fitness-weighted."""

    best: float = 0.25
    random: float = 0.25
    num_inspirations: int = 3


@dataclass
class Member:
    program_id: str
    score: float
    cell: str
    iteration: int


@dataclass
class Island:
    elites: dict[str, Member] = field(default_factory=dict)  # cell -> best member
    placed: set[str] = field(default_factory=set)  # every program offered to it (refills)

    def best(self) -> Member | None:
        return max(self.elites.values(), key=lambda m: (m.score, -m.iteration), default=None)


# What a parent's prompt says of a child that repeated a program or changed nothing.
REPEATED = "repeated an earlier program: write a different one"
SAME_AS_PARENT = "same results as the current code: the change did nothing, try another idea"


@dataclass(frozen=True)
class Attempt:
    """What became of one child of a parent: fed back into the next prompt."""

    iteration: int
    status: ProgramStatus
    score: float | None
    summary: str


class Features:
    """Map a program to its MAP-Elites cell.

    Default dimensions: code length relative to the seed (log scale, 0.5x..2x)
    and diversity, the share of the seed's evolvable text that changed.
    A problem may name its own metrics as dimensions (binned on [0, 1] after
    a tanh squash, so any metric scale lands in the grid).
    """

    def __init__(
        self, seed_code: str, dims: tuple[str, ...], bins: int, fixed: tuple[str, ...] = ()
    ):
        self.fixed = fixed  # a tree's files that never change: no part of its text here
        self.seed_text = evolvable_text(seed_code, fixed)
        self.seed_lines = self.seed_text.splitlines()
        self.seed_len = max(1, len(self.seed_text))
        self.dims = dims or ("code_length", "diversity")
        self.bins = max(1, bins)

    def values(self, code: str, metrics: dict) -> dict[str, float]:
        try:
            text = evolvable_text(code, self.fixed)
        except ValueError:  # malformed markers (a stored program never has them): all of it
            text = code
        out: dict[str, float] = {}
        for d in self.dims:
            if d == "code_length":
                out[d] = float(len(text))
            elif d == "diversity":
                out[d] = self.diversity(text)
            else:
                v = metrics.get(d)
                out[d] = float(v) if isinstance(v, (int, float)) and math.isfinite(v) else 0.0
        return out

    def diversity(self, text: str) -> float:
        """1 - similarity to the seed's evolvable text: by character, or, past DIVERSITY_CHARS,
        by line (character matching is quadratic on repetitive code: minutes for one big
        candidate, where lines take milliseconds)."""
        if len(self.seed_text) + len(text) <= DIVERSITY_CHARS:
            sm = SequenceMatcher(None, self.seed_text, text, autojunk=False)
        else:
            sm = SequenceMatcher(None, self.seed_lines, text.splitlines(), autojunk=False)
        return 1.0 - sm.ratio()

    def cell(self, values: dict[str, float]) -> str:
        idx = []
        for d in self.dims:
            v = values.get(d, 0.0)
            if d == "code_length":
                x = (math.log2(max(v, 1.0) / self.seed_len) + 1.0) / 2.0
            elif d == "diversity":
                x = v
            else:
                x = (math.tanh(v) + 1.0) / 2.0
            idx.append(min(self.bins - 1, max(0, int(x * self.bins))))
        return "-".join(map(str, idx))


class Population:
    def __init__(self, num_islands: int, policy: SelectionPolicy, seed: int):
        self.islands = [Island() for _ in range(max(1, num_islands))]
        self.policy = policy
        self.rng = random.Random(seed)
        self.children: dict[str, list[Attempt]] = defaultdict(list)
        self.members: dict[str, Member] = {}
        self.skipped: set[str] = set()  # never selected again (see skip)
        self._best: Member | None = None  # members are never removed, so a running max is exact
        self.clusters: dict[str, tuple[str, int]] = {}  # signature -> (representative, length)
        self.signature_of: dict[str, str] = {}

    # ---- building ----------------------------------------------------------
    def add(self, p: ProgramRow, island: int | None = None) -> bool:
        """Offer a finished program to its island; True if it became an elite."""
        sig = signature(p.score, p.metrics) if p.status == ProgramStatus.OK else None
        if p.parent_id and p.kind != TUNED:  # what the model's changes did (a prompt shows it)
            self.children[p.parent_id].append(self._attempt(p, sig))
        if p.status != ProgramStatus.OK or p.score is None or p.cell is None or sig is None:
            return False
        m = Member(p.program_id, p.score, p.cell, p.iteration)
        self.members[p.program_id] = m
        self.signature_of[p.program_id] = sig
        if self._best is None or (m.score, -m.iteration) > (
            self._best.score,
            -self._best.iteration,
        ):
            self._best = m
        if p.skip_reason:  # skipped before (a resumed run): never offered again
            self.skipped.add(m.program_id)
        length = len(evolvable_text(p.code or ""))
        rep = self.clusters.get(sig)
        if rep is not None and rep[0] != p.program_id:
            if length >= rep[1]:  # behaves as an earlier program and is no shorter
                self.skipped.add(m.program_id)
                return False
            self.skip(rep[0])  # the shorter program represents the cluster from now on
        self.clusters[sig] = (p.program_id, length)
        return self._place(m, p.island if island is None else island)

    def novel(self, p: ProgramRow) -> bool:
        """Does p (evaluated, not yet added) behave unlike every program so far?"""
        sig = signature(p.score, p.metrics) if p.status == ProgramStatus.OK else None
        return sig is not None and sig not in self.clusters

    def _attempt(self, p: ProgramRow, sig: str | None) -> Attempt:
        """What the parent's prompt says of this child: its error's last line, or that it
        repeated or behaved exactly like its parent (small models then try elsewhere)."""
        error = p.artifacts.get("error") or p.artifacts.get("traceback", "")
        summary = (error.strip().splitlines() or [""])[-1][:200] if error else ""
        if p.status == ProgramStatus.DUPLICATE:
            summary = REPEATED
        elif sig is not None and sig == self.signature_of.get(p.parent_id or ""):
            summary = SAME_AS_PARENT
        elif sig is not None and sig in self.clusters:
            summary = "same results as an earlier program"
        return Attempt(p.iteration, p.status, p.score, summary)

    def skip(self, program_id: str) -> None:
        """Never select program_id again; the best of the rest offered to its cell takes
        its place there (as if it had never come), so a cell never holds a dead elite."""
        self.skipped.add(program_id)
        m = self.members.get(program_id)
        if m is None:
            return
        for isl in self.islands:
            cur = isl.elites.get(m.cell)
            if cur is None or cur.program_id != program_id:
                continue
            rest = [
                self.members[pid]
                for pid in isl.placed
                if pid not in self.skipped and self.members[pid].cell == m.cell
            ]
            if rest:
                isl.elites[m.cell] = max(rest, key=lambda r: (r.score, -r.iteration))
            else:
                del isl.elites[m.cell]

    def _place(self, m: Member, island: int) -> bool:
        if m.program_id in self.skipped:
            return False
        isl = self.islands[island % len(self.islands)]
        isl.placed.add(m.program_id)
        cur = isl.elites.get(m.cell)
        if cur is None or m.score > cur.score:
            isl.elites[m.cell] = m
            return True
        return False

    def migrate(self, program_id: str, to_island: int) -> None:
        m = self.members.get(program_id)
        if m is not None:
            self._place(m, to_island)

    def worst_island(self, keep: str | None) -> int | None:
        """The island whose best is lowest, other than one holding `keep` (None: one island)."""
        if len(self.islands) < 2:
            return None
        ranked = sorted(
            (
                i
                for i, isl in enumerate(self.islands)
                if keep not in {m.program_id for m in isl.elites.values()}
            ),
            key=lambda i: b.score if (b := self.islands[i].best()) else -math.inf,
        )
        return ranked[0] if ranked else None

    def reset_island(self, island: int, program_id: str) -> None:
        """Restart an island from one program: its elites are forgotten (a stagnation)."""
        isl = self.islands[island % len(self.islands)]
        isl.elites.clear()
        isl.placed.clear()
        m = self.members.get(program_id)
        if m is not None:
            self._place(m, island)

    def migration_plan(self) -> list[tuple[str, int]]:
        """Ring migration: each island's best moves to the next island."""
        plan: list[tuple[str, int]] = []
        n = len(self.islands)
        if n < 2:
            return plan
        for i, isl in enumerate(self.islands):
            b = isl.best()
            if b is not None:
                plan.append((b.program_id, (i + 1) % n))
        return plan

    # ---- selection ---------------------------------------------------------
    def best(self) -> Member | None:
        """The best program so far, skipped or not (a skipped one is still a result)."""
        return self._best

    def selectable_best(self) -> Member | None:
        """The best program that may still be a parent."""
        if self._best is None or self._best.program_id not in self.skipped:
            return self._best
        return max(
            (m for m in self.members.values() if m.program_id not in self.skipped),
            key=lambda m: (m.score, -m.iteration),
            default=None,
        )

    def select_parent(self, island: int) -> Member | None:
        """None only when no program may be a parent (none evaluated, or all skipped)."""
        elites = list(self.islands[island % len(self.islands)].elites.values())
        if not elites:
            return self.selectable_best()
        r = self.rng.random()
        if r < self.policy.best:
            return max(elites, key=lambda m: (m.score, -m.iteration))
        if r < self.policy.best + self.policy.random:
            return self.rng.choice(sorted(elites, key=lambda m: m.iteration))
        # Rank-weighted: robust to the score's scale and sign.
        ranked = sorted(elites, key=lambda m: (m.score, -m.iteration))
        weights = [i + 1 for i in range(len(ranked))]
        return self.rng.choices(ranked, weights=weights, k=1)[0]

    def select_second_parent(self, first: str) -> Member | None:
        """A crossover partner other than first: a random pick among the top third (at
        least 3) of every island's elites."""
        pool = [m for isl in self.islands for m in isl.elites.values() if m.program_id != first]
        if not pool:
            return None
        pool.sort(key=lambda m: (m.score, -m.iteration), reverse=True)
        return self.rng.choice(pool[: max(3, len(pool) // 3)])

    def inspirations(self, island: int, exclude: str) -> list[Member]:
        """Top programs of the island plus one diverse pick from another cell."""
        elites = sorted(
            (
                m
                for m in self.islands[island % len(self.islands)].elites.values()
                if m.program_id != exclude
            ),
            key=lambda m: (m.score, -m.iteration),
            reverse=True,
        )
        k = self.policy.num_inspirations
        picked = elites[: max(0, k - 1)]
        rest = elites[len(picked) :]
        if rest:
            picked.append(self.rng.choice(rest))
        return picked

    def attempts(self, parent_id: str, limit: int = 5) -> list[Attempt]:
        return self.children.get(parent_id, [])[-limit:]
