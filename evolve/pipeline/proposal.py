"""What one iteration asks the model: a parent (a crossover's second parent too) and the
prompt, packed into the model's window.

A parent whose prompt cannot be packed even down to its EVOLVE-BLOCK is skipped for
good instead of wedging the run: the reason is stored with the program
(programs.skip_reason), so a resumed run never picks it again, and another parent is
picked. Only when no program at all can be a parent does the run end (NoParent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from evaluators.sandbox import PRIVATE_PREFIX
from evolve.archive import Archive, ProgramRow
from evolve.edits.blocks import evolvable_text
from evolve.llm.context_budget import PromptTooLong
from evolve.problem.load import Problem
from evolve.search.population import Population
from evolve.search.prompt_files import about
from evolve.search.prompts import PromptBuilder, PromptContext, ShownProgram, Version, evolving_code
from evolve.search.versions import block_functions, versioned

RETRY_NOTE = (
    "Your previous answer repeated a program that was already tried. "
    "Write a different one: change how it decides, not only its constants."
)

ARTIFACT_CHARS = 1500  # per artifact shown in a prompt


class NoParent(RuntimeError):
    """No program may be a parent: none was evaluated, or every one's prompt is too long."""


@dataclass(frozen=True)
class Proposal:
    parent: ProgramRow
    second: ProgramRow | None  # a crossover's partner
    edit_format: str  # the run's, or crossover | funsearch | repair
    messages: list[dict]


class Proposer:
    """Picks parents from the population and packs their prompt; skips unpackable ones.

    `program` reads a program the population names from the archive; `note` tells the
    screen (RunObserver.note)."""

    def __init__(
        self,
        archive: Archive,
        pop: Population,
        prompts: PromptBuilder,
        program: Callable[[str], ProgramRow],
        edit_format: str,
        crossover_rate: float,
        note: Callable[[str], None],
    ):
        self.archive, self.pop, self.prompts, self.program = archive, pop, prompts, program
        self.edit_format, self.crossover_rate, self.note = edit_format, crossover_rate, note
        self.last_skip: str | None = None  # "PROGRAM: reason" of this session's latest skip

    def propose(self, island: int, resample: int = 0, notes: str = "") -> Proposal:
        """The next call's prompt; `resample` > 0: the last reply repeated a program."""
        while True:
            chosen = self.pop.select_parent(island)
            if chosen is None:
                raise NoParent(self._why_none())
            parent = self.program(chosen.program_id)
            second, fmt = None, self.edit_format
            if self.crossover_rate > 0 and self.pop.rng.random() < self.crossover_rate:
                partner = self.pop.select_second_parent(parent.program_id)
                if partner is not None:
                    second, fmt = self.program(partner.program_id), "crossover"
            inspirations = [
                self.program(m.program_id) for m in self.pop.inspirations(island, parent.program_id)
            ]
            ctx = PromptContext(
                parent=shown(parent, full=True, problem=self.prompts.problem),
                edit_format=fmt,
                inspirations=[shown(p, problem=self.prompts.problem) for p in inspirations],
                attempts=self.pop.attempts(parent.program_id),
                second=shown(second, full=True, problem=self.prompts.problem) if second else None,
                notes=notes,
                hint=self._hint(),
                retry=RETRY_NOTE if resample else "",
            )
            # FunSearch's versions are of one function: a program of several files is asked
            # with the plain prompts
            if (
                self.prompts.style == "funsearch"
                and second is None
                and not self.prompts.problem.files
            ):
                ctx = funsearch_context(ctx, parent, inspirations[:1])
            try:
                return Proposal(parent, second, ctx.edit_format, self.prompts.build(ctx))
            except PromptTooLong as e:
                # Packing drops the second parent and the inspirations before it gives up:
                # what does not fit is the parent itself.
                self.skip(parent, str(e))

    def repair(self, failed: ProgramRow, notes: str = "") -> Proposal | None:
        """A call that fixes a failed child, shown its error; None if it cannot fit."""
        ctx = PromptContext(
            parent=shown(failed, full=True, problem=self.prompts.problem),
            edit_format="repair",
            notes=notes,
        )
        try:
            return Proposal(failed, None, "repair", self.prompts.build(ctx))
        except PromptTooLong:
            return None

    def _hint(self) -> str:
        hints = self.prompts.problem.hints
        return self.pop.rng.choice(hints) if hints else ""

    def skip(self, parent: ProgramRow, reason: str) -> None:
        self.archive.skip_parent(parent.program_id, reason)
        self.pop.skip(parent.program_id)
        self.last_skip = f"{parent.program_id}: {reason}"
        score = "-" if parent.score is None else f"{parent.score:.6g}"
        self.note(
            f"program {parent.program_id} (score {score}) is skipped as a parent from now on:"
            f" {reason}"
        )

    def _why_none(self) -> str:
        if not self.pop.members:  # the seed is in every run's population
            return "no program to evolve: the population is empty"
        last = f" (last: {self.last_skip})" if self.last_skip else ""
        return (
            f"no program can be a parent: every program that scored ({len(self.pop.members)})"
            f" has a prompt too long for the model's context window{last}"
        )


def funsearch_context(
    ctx: PromptContext, parent: ProgramRow, others: list[ProgramRow]
) -> PromptContext:
    """FunSearch's prompt: the parent and the island's best other program, ordered by
    score and renamed _v0, _v1; the model writes _v2. A block without functions keeps the
    run's own prompt."""
    names = block_functions(parent.code or "")
    if not names:
        return ctx
    chosen = sorted([parent, *others], key=lambda p: (p.score is not None, p.score or 0.0))
    versions = [
        Version(
            f"{names[0]}_v{k}",
            versioned(evolving_code(p.code or ""), names, k),
            p.score,
        )
        for k, p in enumerate(chosen)
    ]
    return replace(
        ctx,
        edit_format="funsearch",
        versions=versions,
        target=f"{names[0]}_v{len(versions)}",
        inspirations=[],
    )


def shown(p: ProgramRow, full: bool = False, problem: Problem | None = None) -> ShownProgram:
    """A program as a prompt shows it: a parent whole with its feedback, an inspiration
    as its EVOLVE-BLOCKs only (of a tree, its evolving files', and the files the call is
    about: `problem` says which files are whose)."""
    arts = {
        k: (v if len(v) <= ARTIFACT_CHARS else "..." + v[-ARTIFACT_CHARS:])
        for k, v in p.artifacts.items()
        if isinstance(v, str) and v.strip() and not k.startswith(PRIVATE_PREFIX)
    }
    if p.code is None:
        raise ValueError(f"program {p.program_id} has no code")
    fixed = problem.fixed_files if problem else ()
    code = p.code if full else evolvable_text(p.code, fixed)
    metrics = {k: v for k, v in p.metrics.items() if not k.startswith(PRIVATE_PREFIX)}
    on = about(p.diff or "", arts, problem) if problem and problem.files and full else ()
    return ShownProgram(
        code=code, score=p.score, metrics=metrics, artifacts=arts if full else {}, about=on
    )
