"""What an agent's tools do to its working copy: list, read, edit (the problem's edit
formats, as a single call's reply is applied), and the text an evaluation is told as.

Every text a tool returns is bounded (READ_CHARS, RESULT_CHARS): a file, an evaluation's
artifacts and the model's own words come back cut, never whole when long. An evaluation's
texts are redacted before they get here (evolve/pipeline/evaluation.py), and private metrics and
artifacts (`private.`) are never shown, as in a prompt."""

from __future__ import annotations

from collections.abc import Mapping

from evaluators import tree
from evaluators.sandbox import PRIVATE_PREFIX
from evolve.pipeline.candidates import edit_of
from evolve.problem.load import Problem
from evolve.problem.size_cap import oversized

READ_CHARS = 12_000  # of a file read
ARTIFACT_CHARS = 1_500  # of each artifact of an evaluation
RESULT_CHARS = 6_000  # of a whole tool result
SPECIAL = ("description", "notes", "feedback")


def cut(text: str, limit: int, tail: bool = False) -> str:
    """At most `limit` characters of text, saying so when cut (`tail`: its end is kept)."""
    if len(text) <= limit:
        return text
    if tail:
        return f"[... {len(text) - limit:,} characters cut]\n" + text[-limit:]
    return text[:limit] + f"\n[... {len(text) - limit:,} characters cut]"


def outcome_text(status: str, score: float | None, metrics: Mapping, artifacts: Mapping) -> str:
    """An evaluation (or the parent's) as the model reads it: status, score, public metrics,
    public artifacts (each cut at its end, where errors are)."""
    shown_score = "none" if score is None else f"{score:.6g} (higher is better)"
    lines = [f"status: {status}", f"score: {shown_score}"]
    shown = {k: v for k, v in metrics.items() if not str(k).startswith(PRIVATE_PREFIX)}
    if shown:
        lines.append("metrics: " + ", ".join(f"{k}={_num(v)}" for k, v in sorted(shown.items())))
    for k, v in sorted(artifacts.items()):
        if isinstance(v, str) and v.strip() and not str(k).startswith(PRIVATE_PREFIX):
            lines.append(f"{k}:\n{cut(v.strip(), ARTIFACT_CHARS, tail=True)}")
    return cut("\n".join(lines), RESULT_CHARS)


def _num(v: object) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)[:80]


class Workspace:
    """The working copy of one agent iteration: its parent's code, edited in place."""

    def __init__(
        self, problem: Problem, parent_code: str, edit_format: str, notes: str, feedback: str
    ):
        self.problem, self.parent, self.code = problem, parent_code, parent_code
        self.edit_format, self.notes, self.feedback = edit_format, notes, feedback

    @property
    def changed(self) -> bool:
        return self.code != self.parent

    def files(self) -> dict[str, str]:
        """path -> text of the working copy (a one-file program: under its entry name)."""
        if self.problem.files:
            try:
                return tree.decode(self.code, self.problem.entry)
            except tree.TreeError:
                pass
        return {self.problem.entry: self.code}

    def list(self) -> str:
        paths = list(self.files())
        return "files: " + ", ".join(paths) + "; also: " + ", ".join(SPECIAL)

    def read(self, path: str) -> str:
        files = self.files()
        key = path.strip().strip("/")
        if key in files:
            return f"{key}:\n" + cut(files[key], READ_CHARS)
        special = {
            "description": f"{self.problem.description}\n{self.problem.domain_notes}".strip(),
            "notes": self.notes or "(no notes yet)",
            "feedback": self.feedback or "(no feedback)",
        }
        if key in special:
            return cut(special[key], READ_CHARS)
        known = ", ".join([*files, *SPECIAL])
        return f"no file {ascii(key[:80])}: read one of {known}"

    def edit(self, text: str) -> str:
        """Apply an edit to the working copy; what became of it, in one line."""
        out = edit_of(text, self.edit_format, self.code, self.problem)
        if out.oversized is not None or not out.ok or out.code is None:
            why = out.error or f"the program would be {out.oversized:,} bytes"
            return f"edit not applied (the working copy is unchanged): {cut(why, 300)}"
        refused = oversized(self.problem, out.code)
        if refused is not None:
            why = refused.artifacts.get("error", "over the size cap")
            return f"edit not applied (the working copy is unchanged): {cut(why, 300)}"
        if out.code == self.code:
            return "the edit changed nothing"
        self.code = out.code
        return "edit applied to the working copy"
