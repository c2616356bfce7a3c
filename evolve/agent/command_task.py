"""TASK.md: what an agent's command is told, in its workspace and as `{task}`: the problem,
the notes, the parent's result on train, and the rules its workspace is checked against."""

from __future__ import annotations

from evolve.agent.command_workspace import SCRATCH_DIR, TASK_FILE
from evolve.problem.load import Problem


def task_text(problem: Problem, files: list[str], notes: str, feedback: str, evals: int) -> str:
    fixed = [f for f in files if f in problem.fixed_files]
    evolving = [f for f in files if f not in problem.fixed_files]
    parts = [
        "# Task: improve this program",
        "",
        "You are one step of an evolutionary search (evolve). Edit the program files in this "
        "folder so that the program scores higher; the files as you leave them when you exit "
        "are the candidate, evaluated on training and held-out data after you finish.",
        "",
        "## The problem",
        (problem.description or "(no description)").strip(),
    ]
    if problem.domain_notes.strip():
        parts += ["", "## Domain notes", problem.domain_notes.strip()]
    if notes.strip():
        parts += ["", "## Notes from earlier iterations", notes.strip()]
    parts += ["", "## The current program on the training data", feedback.strip()]
    parts += [
        "",
        "## Rules (a workspace that breaks one is rejected, unevaluated)",
        f"- Files you may change: {', '.join(evolving)}. Where a file has EVOLVE-BLOCK-START "
        "and EVOLVE-BLOCK-END comment lines, change only the lines between them.",
    ]
    if fixed:
        parts.append(f"- Fixed files (read them, never change them): {', '.join(fixed)}.")
    parts += [
        f"- Create no other file (except under {SCRATCH_DIR}/ or a dot folder, which are "
        f"ignored), no symlink; do not delete a file or edit {TASK_FILE}.",
        f"- Run `evolve-eval` to score the files as they are now on the training data: at "
        f"most {evals} time(s) this step; it prints the status, score (higher is better), "
        "metrics and errors.",
        "- Nothing outside this folder is reachable: the evaluator and data are not here.",
    ]
    return "\n".join(parts) + "\n"
