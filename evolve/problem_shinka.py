"""Load a ShinkaEvolve-format folder (evaluate.py + initial.py) into a Problem.

ShinkaEvolve runs `python evaluate.py --program_path P --results_dir D` and reads back
correct.json and metrics.json (evaluators/inside/shinka_run.py does the same in the
sandbox). Its settings live in a YAML file its run_evo.py reads (shinka_small.yaml in its
examples; --config picks another) and its task description often in run_evo.py itself
(`search_task_sys_msg = \"\"\"...\"\"\"`): both are read, never imported, and every key
is reported once as honoured or ignored (evolve/settings/shinka.py)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import yaml

from evolve.edits.blocks import find_blocks
from evolve.problem_model import Problem, ProblemError, Stage
from evolve.settings.overrides import Overrides
from evolve.settings.shinka import ShinkaSettings, read_settings

EVALUATE = "evaluate.py"
SEED = "initial.py"
DEFAULT_CONFIG = "shinka_small.yaml"  # run_evo.py's default --config_path
RUNNER = "run_evo.py"
TIMEOUT_S = 300.0  # no yaml key: run_evo.py's LocalJobConfig(time=...) is code
SeedReader = Callable[[Overrides, Path, str, str, Path], tuple[Path, str]]


def is_shinka(root: Path) -> bool:
    """A ShinkaEvolve folder: its evaluator is evaluate.py (OpenEvolve's is evaluator.py)."""
    return (root / EVALUATE).is_file() and not (root / "evaluator.py").is_file()


def config_files(root: Path) -> list[Path]:
    """The folder's ShinkaEvolve configs, the one run_evo.py reads by default first."""
    files = sorted(p for p in root.glob("shinka*.y*ml") if p.is_file())
    return sorted(files, key=lambda p: p.name != DEFAULT_CONFIG)


def _config(root: Path, shown: Path, ov: Overrides) -> tuple[Path | None, str]:
    if ov.config is not None:
        given = Path(ov.config).expanduser()
        for path, name in ((root / given, shown / given), (given, given)):
            if path.is_file():
                return path.resolve(), str(name)
        raise ProblemError(f"--config {ov.config}: no such file in {shown} nor here")
    files = config_files(root)
    return (files[0], str(shown / files[0].name)) if files else (None, "")


def _settings(path: Path | None, name: str) -> ShinkaSettings:
    if path is None:
        return ShinkaSettings()
    try:
        raw = yaml.safe_load(path.read_text()) or {}
        return read_settings(raw, name)
    except UnicodeDecodeError:
        raise ProblemError(f"{name}: not a YAML file (not text)") from None
    except yaml.YAMLError as e:
        raise ProblemError(f"{name}: invalid YAML: {' '.join(str(e).split())}") from None
    except ValueError as e:
        raise ProblemError(str(e)) from None


def task_message(root: Path) -> str:
    """run_evo.py's task description: a top-level string named *sys_msg, or the
    task_sys_msg= string of a call (EvolutionConfig(...)); '' when it has none."""
    path = root / RUNNER
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id.endswith("sys_msg") for t in node.targets
        ):
            value = node.value
        elif isinstance(node, ast.keyword) and node.arg == "task_sys_msg":
            value = node.value
        else:
            continue
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value.strip()
    return ""


def _check_evaluate(root: Path, shown: Path) -> None:
    """evaluate.py parses (read, never imported: the controller runs no problem code)."""
    try:
        ast.parse((root / EVALUATE).read_text())
    except SyntaxError as e:
        raise ProblemError(f"{shown / EVALUATE}:{e.lineno}: does not parse: {e.msg}") from None


def load_shinka(root: Path, shown: Path, ov: Overrides, read_seed: SeedReader) -> Problem:
    """The folder's Problem: combined_score maximised on one split, ShinkaEvolve's 300 s
    job limit, 4096 MB of memory (ShinkaEvolve sets none)."""
    path, name = _config(root, shown, ov)
    st = _settings(path, name)
    if st.language not in (None, "python"):
        raise ProblemError(
            f"{name}: evo_config.language: '{st.language}': a ShinkaEvolve folder with "
            f"{SEED} evolves Python; name another seed with --initial-program"
        )
    entry = SEED
    if st.seed is not None and (root / st.seed).is_file():
        entry = st.seed
    elif st.seed is not None and (root / Path(st.seed).name).is_file():
        entry = Path(st.seed).name  # a path from the repository's root, as Hydra tasks write it
    where = f"{name}: evo_config.init_program_path" if st.seed else str(shown)
    if ov.initial_program is None and not (root / entry).is_file():
        raise ProblemError(
            f"{shown}: no {entry}; name the seed program with --initial-program PATH "
            "(or evo_config.init_program_path in its shinka_*.yaml)"
        )
    seed_path, seed_code = read_seed(ov, root, entry, where, shown)
    _check_evaluate(root, shown)
    notices = [
        f"evolve: config: {name}" if path else "evolve: config: none (ShinkaEvolve defaults)"
    ]
    notices += [f"{Path(name).name or 'config'}: ignored key {k}: {why}" for k, why in st.ignored]
    return Problem(
        name=root.name,
        description=f"ShinkaEvolve-format problem {root.name}",
        root=root,
        fmt="shinka",
        entry=seed_path.name,
        seed_code=seed_code,
        metric="combined_score",
        direction="maximize",
        domain_notes=st.domain_notes or task_message(root),
        timeout_s=TIMEOUT_S,
        memory_mb=4096,
        splits=("train",),
        train_split="train",
        test_split=None,
        cascade=(Stage(split="train"),),
        feature_dims=("code_length", "diversity"),
        feature_bins=8,
        num_islands=st.num_islands,
        iterations=st.iterations,
        edit_format=st.edit_format,
        max_code_bytes=64 * 1024,
        parallel=st.parallel,
        migration_interval=st.migration_interval,
        seed_path=seed_path,
        config_file=path,
        notices=tuple(notices),
        whole_file=not find_blocks(seed_code),
    )


def describe_lines(problem: Problem) -> list[str]:
    """`evolve check`'s lines on the config: the file read, the others, the keys honoured
    (the ignored ones are the problem's notices, said once)."""
    path = problem.config_file
    name = str(path) if path else ""
    lines = [f"  evaluator: python {EVALUATE} --program_path P --results_dir D (as ShinkaEvolve)"]
    lines.append(f"  config: {path or 'none: ShinkaEvolve defaults'}")
    others = [p.name for p in config_files(problem.root) if p.resolve() != path]
    if others:
        lines.append(f"  config files not read: {', '.join(others)} (--config FILE)")
    st = _settings(path, name)
    short = Path(name).name
    lines += [f"  {short}: {k}: {how}" for k, how in st.honoured]
    if not st.domain_notes and problem.domain_notes:
        lines.append(f"  domain notes: from {RUNNER}'s task message")
    return lines
