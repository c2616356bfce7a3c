"""Render prompts from Jinja2 templates (the repository's prompts/ folder, installed as the
package evolve.prompt_templates; overridable per problem in <problem>/prompts/).

StrictUndefined makes a template that names a missing variable fail loudly
at the first render instead of silently sending the model an empty hole.
Every value a template shows goes through evolve/inert.py's strip_controls: a
candidate's output, errors and code reach the model without control characters
or terminal escape sequences.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import jinja2

from evolve.archive.vocab import EditFormat
from evolve.edits.blocks import find_blocks, split_lines
from evolve.inert import strip_controls
from evolve.llm.context_budget import PromptTooLong, TokenBudget, estimate_tokens, messages_tokens
from evolve.problem.load import Problem
from evolve.prompt_templates import TEMPLATES_DIR  # package data: the generic templates
from evolve.search.population import Attempt
from evolve.search.prompt_files import cut_to_signatures, files_view, per_file

EDIT_FORMATS = tuple(EditFormat)  # the formats a run may ask for
PROMPT_STYLES = ("full", "short", "funsearch")
ARTIFACT_STEPS = (
    600,
    200,
)  # characters each artifact is cut to, in turn, when a prompt is too long
CACHED_CHARS = 64 * 1024  # longer texts are not kept in the token-count cache


@dataclass(frozen=True)
class ShownProgram:
    """A program as a prompt shows it."""

    code: str
    score: float | None
    metrics: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)
    about: tuple[str, ...] = ()  # a tree's files the call is about: in full the longest


@dataclass(frozen=True)
class Version:
    """One earlier version in a FunSearch prompt: its evolving code, renamed NAME_vK."""

    name: str
    code: str
    score: float | None


@dataclass(frozen=True)
class PromptContext:
    parent: ShownProgram
    edit_format: str  # diff | block | full | crossover | funsearch | repair
    inspirations: list[ShownProgram] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    second: ShownProgram | None = None
    notes: str = ""  # the run's latest meta-notes (system prompt: they change rarely)
    hint: str = ""  # one of the problem's known ideas
    retry: str = ""  # why this call is asked again (its last reply repeated a program)
    versions: list[Version] = field(default_factory=list)  # funsearch: oldest first
    target: str = ""  # funsearch: the function the model writes, NAME_vK


class PromptBuilder:
    """Renders the chat messages of one iteration.

    With a token budget the prompt is packed to fit it: inspirations go first
    (one by one), then recent attempts (oldest first), then the evaluator
    feedback is shortened and dropped, then a crossover's second parent, then
    the code outside the parent's EVOLVE-BLOCKs, then the domain notes. The
    EVOLVE-BLOCK itself is never cut; if even that does not fit, PromptTooLong (a run
    then skips that parent for good: evolve/pipeline/proposal.py). An inspiration never causes
    it: they are the first to go.
    """

    def __init__(
        self,
        problem: Problem,
        budget: TokenBudget | None = None,
        style: str = "full",
        max_inspirations: int | None = None,
        max_attempts: int | None = None,
        count_tokens: Callable[[str], int] = estimate_tokens,
    ):
        if style not in PROMPT_STYLES:
            raise ValueError(f"prompt style must be one of {', '.join(PROMPT_STYLES)}")
        self.problem = problem
        self.budget = budget
        self.style = style
        self.max_inspirations = max_inspirations
        self.max_attempts = max_attempts
        self.count_tokens = count_tokens
        self._counted: dict[str, int] = {}
        self.last_dropped: list[str] = []  # what the last build() left out to fit
        search = [str(problem.prompt_dir)] if problem.prompt_dir.is_dir() else []
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader([*search, str(TEMPLATES_DIR)]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            autoescape=False,
            finalize=_inert,  # every {{ value }}: the candidate's text included
        )
        self.env.filters["files"] = lambda code: files_view(code, self.problem)

    @classmethod
    def for_config(
        cls, problem: Problem, cfg, count_tokens: Callable[[str], int] | None = None
    ) -> PromptBuilder:
        """The builder a run's config asks for (its model profile's window and style);
        count_tokens: the model's own tokenizer when there is one at hand."""
        window = getattr(cfg, "context_window", None)
        budget = TokenBudget.for_model(window, cfg.max_tokens) if window else None
        return cls(
            problem,
            budget,
            getattr(cfg, "prompt_style", "full"),
            getattr(cfg, "num_inspirations", None),
            getattr(cfg, "max_attempts", None),
            count_tokens or estimate_tokens,
        )

    def count_with(self, count_tokens: Callable[[str], int]) -> None:
        """Count with the model's own tokenizer from now on (the local model's, once its
        server is up): the builder made when the run's settings were checked serves the run."""
        self.count_tokens = count_tokens
        self._counted.clear()

    def _template(self, name: str) -> str:
        """NAME.j2, or NAME_short.j2 in the short style where there is one; a problem's own
        NAME.j2 wins over our generic short one. FunSearch prompts are short ones. A program
        of several files is shown file by file: the full templates."""
        if self.style in ("short", "funsearch") and not self.problem.files:
            own = self.problem.prompt_dir
            if (own / f"{name}_short.j2").is_file() or (
                not (own / f"{name}.j2").is_file()
                and (TEMPLATES_DIR / f"{name}_short.j2").is_file()
            ):
                return f"{name}_short.j2"
        return f"{name}.j2"

    def render(self, ctx: PromptContext, problem: Problem | None = None) -> list[dict]:
        problem = problem or self.problem
        system = self.env.get_template(self._template("system")).render(
            problem=problem, notes=ctx.notes
        )
        user = self.env.get_template(self._template(ctx.edit_format)).render(
            problem=problem,
            parent=ctx.parent,
            inspirations=ctx.inspirations,
            attempts=ctx.attempts,
            second=ctx.second,
            hint=ctx.hint,
            retry=ctx.retry,
            versions=ctx.versions,
            target=ctx.target,
            last=ctx.versions[-1].name if ctx.versions else "",
            edit_format=ctx.edit_format,
        )
        return [
            {"role": "system", "content": system.strip()},
            {"role": "user", "content": user.strip()},
        ]

    def meta(
        self,
        attempts: list[str],
        notes: str,
        seed_score: float | None,
        best_score: float | None,
        max_lines: int,
    ) -> list[dict]:
        """The messages of a meta-notes call: recent attempts in, advice out."""
        user = self.env.get_template("meta.j2").render(
            problem=self.problem,
            attempts=attempts,
            notes=notes,
            seed_score=seed_score,
            best_score=best_score,
            max_lines=max_lines,
        )
        system = "You review an evolution run of programs and write short, concrete advice."
        return [{"role": "system", "content": system}, {"role": "user", "content": user.strip()}]

    def tokens(self, messages: list[dict]) -> int:
        return messages_tokens(messages, self._count)

    def _count(self, text: str) -> int:
        """count_tokens, remembered: packing re-counts the unchanged system prompt at every step.
        Texts over CACHED_CHARS are counted afresh: a huge parent would pin megabytes here."""
        if len(text) > CACHED_CHARS:
            return self.count_tokens(text)
        n = self._counted.get(text)
        if n is None:
            if len(self._counted) > 256:
                self._counted.clear()
            n = self._counted[text] = self.count_tokens(text)
        return n

    def build(self, ctx: PromptContext) -> list[dict]:
        if self.max_inspirations is not None:
            ctx = replace(ctx, inspirations=list(ctx.inspirations)[: self.max_inspirations])
        if self.max_attempts is not None:
            ctx = replace(
                ctx, attempts=list(ctx.attempts)[-self.max_attempts :] if self.max_attempts else []
            )
        if self.style in ("short", "funsearch") and not self.problem.files:
            ctx = _shorten(ctx)
        self.last_dropped = []
        if self.budget is None:
            return self.render(ctx)
        return self._pack(ctx, self.budget)

    def _pack(self, ctx: PromptContext, budget: TokenBudget) -> list[dict]:
        limit = budget.prompt_tokens
        problem = self.problem
        for step in self._reductions(ctx):
            messages = self.render(ctx, problem)
            if self.tokens(messages) <= limit:
                return messages
            if step is None:
                break
            what, ctx, problem = step(ctx, problem)
            self.last_dropped.append(what)
        need = self.tokens(messages)
        raise PromptTooLong(
            f"the prompt needs about {need} tokens even with only the EVOLVE-BLOCK shown, more than the "
            f"{limit} a {budget.context_window}-token window leaves after {budget.max_output_tokens} "
            "reply tokens; use a model with a larger context window or lower --max-tokens"
        )

    def _reductions(self, ctx: PromptContext):
        """Yield, in order, functions that make the prompt smaller; None at the end."""
        for _ in range(len(ctx.inspirations)):
            yield lambda c, p: (
                "an inspiration",
                replace(c, inspirations=list(c.inspirations)[:-1]),
                p,
            )
        for _ in range(len(ctx.attempts)):
            yield lambda c, p: ("an attempt", replace(c, attempts=list(c.attempts)[1:]), p)
        if ctx.parent.artifacts:
            for n in ARTIFACT_STEPS:
                yield lambda c, p, n=n: (
                    f"feedback beyond {n} chars",
                    replace(c, parent=_cut_artifacts(c.parent, n)),
                    p,
                )
            yield lambda c, p: (
                "the feedback",
                replace(c, parent=replace(c.parent, artifacts={})),
                p,
            )
        if ctx.second is not None:
            yield lambda c, p: (
                "the second parent's fixed code",
                replace(c, second=replace(c.second, code=per_file(c.second.code, elide_fixed))),
                p,
            )
            yield lambda c, p: (
                "the second parent",
                replace(c, second=None, edit_format="block"),
                p,
            )
        if self.problem.files:  # a tree: the fixed files, then the others but the call's
            yield lambda c, p: (
                "the fixed files (shown as signatures)",
                replace(c, parent=self._cut(c.parent, self.problem.evolving_files)),
                p,
            )
            yield lambda c, p: (
                "the files the call is not about (shown as signatures)",
                replace(c, parent=self._cut(c.parent, c.parent.about)),
                p,
            )
        yield lambda c, p: (
            "the fixed code",
            replace(
                c,
                parent=replace(c.parent, code=per_file(c.parent.code, elide_fixed)),
                edit_format="block" if c.edit_format == "full" else c.edit_format,
            ),
            p,
        )
        if self.problem.domain_notes:
            yield lambda c, p: ("the domain notes", c, replace(p, domain_notes=""))
        yield None

    def _cut(self, shown: ShownProgram, keep: tuple[str, ...]) -> ShownProgram:
        keep = keep or self.problem.evolving_files[:1]
        return replace(shown, code=cut_to_signatures(shown.code, keep, self.problem))


def _inert(value: object) -> object:
    """A value a template shows: text without control characters, anything else as is."""
    return strip_controls(value) if isinstance(value, str) else value


SHORT_ARTIFACT_CHARS = 400


def _shorten(ctx: PromptContext) -> PromptContext:
    """The short style (small models): only the parent's evolving code and imports, only
    feedback worth reading (no one-word values), each piece cut to SHORT_ARTIFACT_CHARS."""
    arts = {
        k: (v if len(v) <= SHORT_ARTIFACT_CHARS else "..." + v[-SHORT_ARTIFACT_CHARS:])
        for k, v in ctx.parent.artifacts.items()
        if len(v.strip()) > 24
    }
    parent = ctx.parent
    if ctx.edit_format != "full":
        parent = replace(parent, code=evolving_code(parent.code))
    second = ctx.second
    if second is not None:
        second = replace(second, code=evolving_code(second.code))
    return replace(ctx, parent=replace(parent, artifacts=arts), second=second)


def _cut_artifacts(p: ShownProgram, n: int) -> ShownProgram:
    return replace(
        p, artifacts={k: (v if len(v) <= n else "..." + v[-n:]) for k, v in p.artifacts.items()}
    )


_IMPORT_RE = re.compile(r"^(import [\w.]|from [\w.]+ import )")


def evolving_code(code: str) -> str:
    """What a small model is shown of a program with one EVOLVE-BLOCK: its top-level imports
    and the block's body, no markers and no notes to copy back (a reply of just the
    function is applied to the block). Several blocks: elide_fixed, markers kept."""
    try:
        blocks = find_blocks(code)
    except ValueError:
        return code
    if len(blocks) != 1:
        return elide_fixed(code)
    imports = [ln.rstrip() for ln in split_lines(code) if _IMPORT_RE.match(ln)]
    body = blocks[0].body.strip("\n")
    return "\n".join(imports) + "\n\n\n" + body + "\n" if imports else body + "\n"


def elide_fixed(code: str) -> str:
    """code with the fixed lines outside its EVOLVE-BLOCKs replaced by a one-line note
    (top-level imports kept, so the model still knows what is available)."""
    try:
        blocks = find_blocks(code)
    except ValueError:
        return code
    if not blocks:
        return code
    lines = split_lines(code)
    inside: set[int] = set()
    for b in blocks:
        inside.update(range(b.start_line, b.end_line + 1))
    out: list[str] = []
    omitted = 0
    for i, line in enumerate(lines):
        if i in inside or _IMPORT_RE.match(line):
            if omitted:
                out.append(f"# ... ({omitted} fixed lines not shown) ...\n")
                omitted = 0
            out.append(line if line.endswith("\n") else line + "\n")
        elif line.strip():
            omitted += 1
    if omitted:
        out.append(f"# ... ({omitted} fixed lines not shown) ...\n")
    return "".join(out)
