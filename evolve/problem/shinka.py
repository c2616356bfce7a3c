"""Load a ShinkaEvolve-format folder (evaluate.py + initial.py) into a Problem.

ShinkaEvolve runs `python evaluate.py --program_path P --results_dir D` and reads back
correct.json and metrics.json (evaluators/inside/shinka_run.py does the same in the
sandbox). Its settings live in a YAML file its run_evo.py reads (shinka_small.yaml in its
examples; --config picks another) and its task description often in run_evo.py itself
(`search_task_sys_msg = \"\"\"...\"\"\"`): both are read, never imported, and every key
is reported once as honoured or ignored (evolve/settings/shinka.py). A folder without a YAML
file names its settings in run_evo.py's EvolutionConfig(...) (seed path, language) and the
like: those constant keywords are read with ast as a YAML file's keys
(evolve/settings/run_evo.py), and LocalJobConfig's time is the evaluation's time limit."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import yaml

from evaluators.inside.languages import Language, by_name, by_suffix
from evolve.edits.blocks import find_blocks
from evolve.problem.model import ONE_SPLIT, Problem, ProblemError
from evolve.settings.overrides import Overrides
from evolve.settings.run_evo import RunEvo, read_run_evo
from evolve.settings.shinka import ShinkaSettings, read_settings

EVALUATE = "evaluate.py"
SEED = "initial.py"
DEFAULT_CONFIG = "shinka_small.yaml"  # run_evo.py's default --config_path
RUNNER = "run_evo.py"
TIMEOUT_S = 300.0  # without run_evo.py's LocalJobConfig(time=...)
# ShinkaEvolve 0.0.7's languages (shinka/utils/languages.py) and their seeds' suffixes
SUFFIX = {"python": ".py", "cpp": ".cpp", "go": ".go", "rust": ".rs", "swift": ".swift",
          "julia": ".jl", "fortran": ".f90", "cuda": ".cu", "json": ".json",
          "markdown": ".md", "wolfram": ".wl"}  # fmt: skip
# what an evaluator builds or runs a candidate of the language with (ShinkaEvolve 0.0.7
# itself checks Rust, Swift, C++, Fortran and Wolfram candidates with these: shinka/edit/
# async_apply.py; its Go example runs `go`)
TOOLS = {"rust": ("rustc",), "cpp": ("g++",), "fortran": ("gfortran",), "swift": ("swiftc",),
         "go": ("go",), "julia": ("julia",), "cuda": ("nvcc",), "wolfram": ("wolframscript",)}  # fmt: skip
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


def _run_evo(root: Path, shown: Path) -> RunEvo | None:
    try:
        return read_run_evo(root / RUNNER, shown / RUNNER)
    except ValueError as e:
        raise ProblemError(str(e)) from None


def settings_of(root: Path, shown: Path, ov: Overrides) -> tuple[Path | None, str, ShinkaSettings]:
    """The file the settings come from (a shinka_*.yaml, else run_evo.py when its
    EvolutionConfig(...) names any), its name as shown, and what it sets."""
    path, name = _config(root, shown, ov)
    if path is not None:
        return path, name, _settings(path, name)
    run_evo = _run_evo(root, shown)
    if run_evo is None or not run_evo.names_settings:
        return None, "", ShinkaSettings()
    name = str(shown / RUNNER)
    try:
        return root / RUNNER, name, read_settings(run_evo.raw, name)
    except ValueError as e:
        raise ProblemError(str(e)) from None


def language_of(st: ShinkaSettings, name: str) -> Language | None:
    """evo_config.language as ShinkaEvolve 0.0.7 names its languages; None: not named."""
    if st.language is None:
        return None
    lang = by_name(st.language)
    if lang is None or lang.name not in SUFFIX:
        raise ProblemError(
            f"{name}: evo_config.language: '{st.language}': not a language ShinkaEvolve "
            f"0.0.7 evolves ({', '.join(SUFFIX)})"
        )
    return lang


def load_shinka(root: Path, shown: Path, ov: Overrides, read_seed: SeedReader) -> Problem:
    """The folder's Problem: combined_score maximised on one split, run_evo.py's job time
    (ShinkaEvolve's 300 s without one), 4096 MB of memory (ShinkaEvolve sets none)."""
    path, name, st = settings_of(root, shown, ov)
    named = language_of(st, name)
    entry = "initial" + SUFFIX[named.name if named else "python"]
    if st.seed is not None:
        short = Path(st.seed).name  # a path from the repository's root, as Hydra tasks write it
        found = not (root / st.seed).is_file() and (root / short).is_file()
        entry = short if found else st.seed
    where = f"{name}: evo_config.init_program_path" if st.seed else str(shown)
    if ov.initial_program is None and st.seed is None and not (root / entry).is_file():
        raise ProblemError(
            f"{shown}: no {entry}; name the seed program with --initial-program PATH "
            "(or evo_config.init_program_path in its shinka_*.yaml or run_evo.py)"
        )
    seed_path, seed_code = read_seed(ov, root, entry, where, shown)
    language = named or by_suffix(seed_path.suffix)
    _check_evaluate(root, shown)
    run_evo = _run_evo(root, shown)
    timeout_s = run_evo.time_s if run_evo and run_evo.time_s else TIMEOUT_S
    notices = [
        f"evolve: config: {name}" if path else "evolve: config: none (ShinkaEvolve defaults)"
    ]
    notices += [f"{Path(name).name or 'config'}: ignored key {k}: {why}" for k, why in st.ignored]
    if path is not None and path.name == RUNNER and run_evo is not None:
        notices += [f"{RUNNER}: not read (computed): {c}" for c in run_evo.computed]
    return Problem(
        name=root.name,
        description=f"ShinkaEvolve-format problem {root.name}",
        root=root,
        fmt="shinka",
        entry=seed_path.name,
        seed_code=seed_code,
        metric="combined_score",
        direction="maximize",
        domain_notes=(st.domain_notes or task_message(root)).strip(),
        timeout_s=timeout_s,
        **ONE_SPLIT,
        num_islands=st.num_islands,
        iterations=st.iterations,
        edit_format=st.edit_format,
        parallel=st.parallel,
        migration_interval=st.migration_interval,
        seed_path=seed_path,
        config_file=path,
        notices=tuple(notices),
        whole_file=not find_blocks(seed_code),
        language=language,
        tools=TOOLS.get(language.name, ()),
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
    run_evo = _run_evo(problem.root, problem.root)
    if path is not None and path.name == RUNNER:
        st = read_settings(run_evo.raw if run_evo else {}, name)
    else:
        st = _settings(path, name)
    short = Path(name).name
    lines += [f"  {short}: {k}: {how}" for k, how in st.honoured]
    if run_evo is not None and run_evo.time_s:
        lines.append(
            f"  {RUNNER}: LocalJobConfig time: the evaluation's time limit ({run_evo.time_s:g} s)"
        )
    if not st.domain_notes and problem.domain_notes:
        lines.append(f"  domain notes: from {RUNNER}'s task message")
    return lines
