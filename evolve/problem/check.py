"""`evolve check`'s verdict on a problem folder: what evolve made of it, and whether its
seed program evaluates cleanly (evolve.check returns it; the command line prints it).

For an OpenEvolve-format folder the lines are what a user needs to trust that it runs
as OpenEvolve would run it: the initial program, the cascade's stages and thresholds,
the config.yaml keys honoured and ignored, requirements missing from the sandbox, the
data files its code reads relative to its folder, and the seed's score through the
whole cascade.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from evaluators.sandbox import EvalResult, Sandbox, Status
from evaluators.toolchain import missing_line
from evaluators.tree import decode
from evolve.archive.vocab import ProgramStatus
from evolve.edits.blocks import find_blocks
from evolve.pipeline.evaluation import CandidateEvaluator, CascadeResult
from evolve.problem.imports import missing_lines
from evolve.problem.load import Problem

WHOLE_FILE = "the whole file evolves (as OpenEvolve and LEVI)"


@dataclass
class CheckReport:
    """`lines`: what the command line prints, in order; `ok`: the seed evaluates cleanly
    on the train split (the whole cascade) and on the held-out split, if any."""

    problem: Problem
    lines: list[str] = field(default_factory=list)
    seed: CascadeResult | None = None  # on the train split, through the whole cascade
    held_out: EvalResult | None = None  # on the held-out split, when the seed passed train
    errors: list[str] = field(default_factory=list)  # what the folder says and the seed belies

    @property
    def ok(self) -> bool:
        return (
            not self.errors
            and self.seed is not None
            and self.seed.status == ProgramStatus.OK
            and (self.held_out is None or self.held_out.status == Status.OK)
        )


def check_seed(
    problem: Problem, sandbox: Sandbox, report: CheckReport, say: Callable[[str], None]
) -> None:
    """Score the seed on the train split (the whole cascade), then on the held-out split;
    each line goes to `report.lines` and `say` as it is known."""

    def line(text: str) -> None:
        report.lines.append(text)
        say(text)

    if sandbox.name == "local":
        for text in _missing(problem):
            line(text)
        if lacking := tools_lacking(problem, sandbox):
            line(f"  error: {lacking}")  # every candidate would fail the same way: no evaluation
            return
    for text in missing_lines(problem, sandbox):  # imports no requirements.txt declares
        line(text)
    ev = CandidateEvaluator(problem, sandbox)
    o = report.seed = ev.evaluate(problem.seed_code)
    stages = ", ".join(f"{k} {v:.6g}" for k, v in o.scores.items())
    line(
        f"  seed on {problem.train_split}: {o.status}, score {o.score}, {o.eval_s:.2f} s"
        + (f" (stages: {stages})" if stages else "")
        + f", metrics {o.metrics}"
    )
    if o.status != ProgramStatus.OK:
        for k, v in o.artifacts.items():
            line(f"    {k}: {str(v).strip()[-600:]}")
    elif "cascade" in o.artifacts:
        line(f"  warning: {o.artifacts['cascade']}")
    headline = problem.metric != "score"  # the default: the score itself
    if (
        o.status == ProgramStatus.OK
        and problem.fmt == "native"
        and headline
        and problem.metric not in o.metrics
    ):
        report.errors.append(
            f"problem.toml: metric '{problem.metric}' is not a metric the evaluator returns "
            f"(it returns: {', '.join(sorted(o.metrics)) or 'none'})"
        )
        line(f"  error: {report.errors[-1]}")
    if problem.test_split and o.status == ProgramStatus.OK:
        r = report.held_out = ev.run_split(problem.seed_code, problem.test_split)
        line(
            f"  seed on {problem.test_split} (held out): {r.status}, score {r.score}, {r.eval_s:.2f} s"
        )


def describe(problem: Problem) -> list[str]:
    """What evolve made of the folder, before anything runs."""
    lines = [
        f"{problem.name} ({problem.fmt}): {problem.description}",
        f"  initial program: {problem.seed_file}",
        *([f"  seed has no EVOLVE-BLOCK markers: {WHOLE_FILE}"] if problem.whole_file else []),
        *tree_lines(problem),
        f"  splits {', '.join(problem.splits)}, held-out {problem.test_split or '-'}",
        f"  cascade: {_cascade(problem)}",
        f"  limits: timeout {problem.timeout_s:g} s"
        + (" per stage" if problem.fmt == "openevolve" else "")
        + f", memory {problem.memory_mb} MB",
    ]
    if problem.env:
        lines.append(f"  environment for the evaluator: {', '.join(sorted(problem.env))}")
    if not problem.language.is_python:
        lines.append(
            f"  language: {problem.language.name} (EVOLVE-BLOCK markers in "
            f"{problem.language.comment} comments; its evaluator compiles it)"
        )
    if problem.tools:
        lines.append(f"  tools for the evaluator: {', '.join(problem.tools)}")
    if problem.fmt in ("openevolve", "skydiscover"):
        from evolve.problem.config import unread_configs
        from evolve.settings.report import config_report

        report = config_report(problem.root, problem.config_file)
        name = problem.config_file.name if problem.config_file else "config.yaml"
        lines.append(f"  config: {problem.config_file or 'none: OpenEvolve defaults'}")
        if unread_configs(problem):
            others = ", ".join(unread_configs(problem))
            lines.append(f"  config files not read: {others} (pick one with --config FILE)")
        if problem.fmt == "skydiscover":  # its defaults, not OpenEvolve's
            from evolve.settings.skydiscover_keys import EVALUATOR_USES_IN_FOLDERS as sky

            report = replace(report, honoured=tuple((k, sky.get(k, h)) for k, h in report.honoured))
        for key, how in report.honoured:
            lines.append(f"  {name}: {key}: {how}")
        for key, why in report.ignored:
            lines.append(f"  {name}: ignored {key}: {why}")
    if problem.fmt == "shinka":
        from evolve.problem.shinka import describe_lines

        lines += describe_lines(problem)
    if problem.fmt == "levi":
        from evolve.problem.levi import describe_lines as levi_lines

        lines += levi_lines(problem)
    if problem.fmt == "gepa":
        from evolve.problem.gepa import describe_lines as gepa_lines

        lines += gepa_lines(problem)
    if problem.fmt == "skydiscover":
        from evolve.problem.skydiscover import describe_lines as sky_lines

        lines += sky_lines(problem)
    files = relative_files(problem.root)
    if files:
        lines.append(f"  data its code reads from its folder: {', '.join(files)}")
    return lines


def tree_lines(problem: Problem) -> list[str]:
    """A program of several files: its files, which evolve (in blocks or whole), which are fixed."""
    if not problem.files:
        return []
    files = decode(problem.seed_code, problem.entry)
    lines = [f"  program: {len(problem.files)} files, entry {problem.entry}"]
    for path in problem.files:
        if path in problem.fixed_files:
            how = "fixed"
        else:
            n = len(find_blocks(files[path]))
            how = f"evolves in {n} EVOLVE-BLOCK{'s' if n > 1 else ''}" if n else "evolves whole"
        lines.append(f"    {path}: {how}")
    return lines


def _cascade(problem: Problem) -> str:
    if problem.fmt != "openevolve":
        return " -> ".join(
            s.split + (f" (>= {s.threshold:g})" if s.threshold is not None else "")
            for s in problem.cascade
        )
    if not problem.cascade_evaluation:
        return f"off: evaluate() alone, retried {problem.eval_retries} times after an exception"
    stages = [
        (s.function or "evaluate") + (f" (>= {s.threshold:g})" if s.threshold is not None else "")
        for s in problem.cascade
    ]
    return " -> ".join(stages) + (
        "; a program under a threshold keeps the score of the stages it ran"
        if len(stages) > 1
        else ""
    )


def tools_lacking(problem: Problem, sandbox: Sandbox) -> str | None:
    """The line naming the declared tools this machine lacks, where the local sandbox would
    bind them (a Docker image carries its own); None when none is missing."""
    if sandbox.name != "local" or not problem.tools:
        return None
    return missing_line(problem.tools, _tools_where(problem))


def _tools_where(problem: Problem) -> str:
    """Where the problem's tools come from, as a user would look for them."""
    if problem.fmt == "native":
        return f"{problem.root / 'problem.toml'}: [evaluation] tools"
    if problem.fmt == "shinka":
        named = problem.config_file or problem.root
        return f"{named}: evo_config.language '{problem.language.name}' (its evaluator runs them)"
    return f"{problem.root}: tools (evolve.tools, or those of `language: {problem.language.name}`)"


def _missing(problem: Problem) -> list[str]:
    """requirements.txt lines this interpreter lacks (the local sandbox runs on it)."""
    from evolve.problem.requirements import missing_requirements

    folder = problem.root / problem.benchmark if problem.benchmark else problem.root
    missing = missing_requirements(folder)
    lines = []
    if missing:
        lines.append(
            f"  warning: requirements.txt: not installed here: {', '.join(missing)} "
            f"(pip install -r {folder / 'requirements.txt'}, or use --sandbox docker, "
            "which layers them on its image)"
        )
    if problem.benchmark:  # a SkyDiscover folder: its Dockerfile's `RUN pip install PKG`
        from evaluators.docker.dockerfile_pip import dockerfile_packages
        from evolve.problem.requirements import missing_lines

        if absent := missing_lines(dockerfile_packages(folder)):
            lines.append(
                f"  warning: {folder / 'Dockerfile'}: pip install {' '.join(absent)}: not "
                "installed here (install them, or use --sandbox docker, which layers them)"
            )
    return lines


def relative_files(root: Path) -> list[str]:
    """Files and folders of `root` named by string constants in its Python modules (alone or
    joined, as in os.path.join(HERE, "data", "x.csv")): best effort, for the report."""
    found: set[str] = set()
    for module in sorted(root.glob("*.py")):
        try:
            tree = ast.parse(module.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            parts: list[str] = []
            if isinstance(node, ast.Call):
                parts = [
                    a.value
                    for a in node.args
                    if isinstance(a, ast.Constant) and isinstance(a.value, str)
                ]
            candidates = [*parts, "/".join(parts)] if len(parts) > 1 else parts
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                candidates = [node.value]
            for text in candidates:
                rel = text.strip().removeprefix("./")
                if not rel or len(rel) > 200 or "\n" in rel or rel.startswith(("/", "..")):
                    continue
                path = root / rel
                try:
                    if path.exists() and path.suffix != ".py" and path.resolve() != root.resolve():
                        found.add(rel + ("/" if path.is_dir() else ""))
                except OSError:
                    continue
    return sorted(found)
