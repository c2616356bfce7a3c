"""Load a problem folder (native, OpenEvolve, ShinkaEvolve or LEVI format) into one
typed description.

Both formats become the same `Problem`, so the loop, the archive and the
sandboxes never branch on where a problem came from.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from evaluators.inside.languages import Language, by_name, by_suffix
from evolve.edits.blocks import END, START, find_blocks
from evolve.problem.config import llm_defaults, read_config
from evolve.problem.data import DataFile
from evolve.problem.gepa import find_script, load_gepa, mentions_call
from evolve.problem.levi import is_levi, load_levi
from evolve.problem.model import (
    Problem,
    ProblemError,
    Resources,
    Stage,
)
from evolve.problem.shinka import is_shinka, load_shinka
from evolve.problem.skydiscover import (
    is_harbor,
    is_skydiscover,
    load_skydiscover,
    refuse_harbor,
    with_keys,
)
from evolve.problem.tree import read_tree
from evolve.settings import ProblemToml, SettingsError, validate
from evolve.settings.environ import resolve_env
from evolve.settings.errors import Style
from evolve.settings.native import DataEntry
from evolve.settings.overrides import Overrides

M = TypeVar("M", bound=BaseModel)


def load_problem(path: str | Path, overrides: Overrides | None = None) -> Problem:
    """The folder's Problem with the per-run `overrides` (flags) applied over its own
    settings, or ProblemError: one line naming the file (as `path` spells it) or the
    flag, the key and what was expected."""
    shown = Path(path)
    root = shown.resolve()
    ov = overrides or Overrides()
    script = None
    if root.is_file() and root.suffix == ".py" and mentions_call(root):
        root, script = root.parent, root  # a GEPA script: its folder holds what it imports
    elif root.is_file():
        raise ProblemError(
            f"{path}: a file, not a problem folder (a script must call GEPA's optimize_anything)"
        )
    elif not root.is_dir():
        raise ProblemError(f"{path}: no such problem folder")
    if script is not None:
        problem = load_gepa(root, shown, script, ov)
    elif (root / "problem.toml").is_file():
        problem = _load_native(root, shown, ov)
    elif (root / "evaluator.py").is_file():
        problem = _load_openevolve(root, shown, ov)
    elif is_skydiscover(root):
        problem = load_skydiscover(root, shown, ov, _seed)
    elif is_harbor(root):
        raise refuse_harbor(shown)
    elif is_shinka(root):
        problem = load_shinka(root, shown, ov, _seed)
    elif is_levi(root):
        problem = load_levi(root, shown, ov, _seed)
    elif (found := find_script(root)) is not None:
        problem = load_gepa(root, shown, found, ov)
    else:
        raise ProblemError(
            f"{path}: not a problem folder (expected problem.toml, or evaluator.py and "
            "initial_program.py in OpenEvolve format, or evaluator/evaluate.sh and "
            "initial_program.py in SkyDiscover format, or evaluate.py and initial.py in "
            "ShinkaEvolve format, or problem.py with score_fn and SEED_PROGRAM in LEVI format, or a "
            "script calling GEPA's optimize_anything)"
        )
    try:
        env = {**problem.env, **resolve_env(ov.env, "--env")}
    except SettingsError as e:
        raise ProblemError(str(e)) from None
    return replace(
        problem,
        env=env,
        timeout_s=problem.timeout_s if ov.timeout_s is None else ov.timeout_s,
        memory_mb=problem.memory_mb if ov.memory_mb is None else ov.memory_mb,
    )


def _seed(ov: Overrides, root: Path, entry: str, where: str, shown: Path) -> tuple[Path, str]:
    """The seed's file and code: --initial-program's (any path), else `entry` in the folder."""
    if ov.initial_program is not None:
        path = Path(ov.initial_program).expanduser()
        if not path.is_file():
            raise ProblemError(f"--initial-program {ov.initial_program}: no such file")
        seed, seed_shown = path.resolve(), path
    else:
        seed, seed_shown = (root / entry).resolve(), shown / entry
        if not seed.is_file():
            raise ProblemError(f"{where}: '{entry}' does not exist in {shown}")
    if seed.name == "evaluator.py":
        raise ProblemError(f"{seed_shown}: the seed program may not be named evaluator.py")
    return seed, _read_seed(seed, seed_shown)


def _load_native(root: Path, shown: Path, ov: Overrides) -> Problem:
    toml_path = shown / "problem.toml"
    if ov.config is not None:  # problem.toml is the one settings file of a native folder
        raise ProblemError(f"--config {ov.config}: {toml_path} is this folder's settings file")
    try:
        data = tomllib.loads((root / "problem.toml").read_text())
    except tomllib.TOMLDecodeError as e:
        raise ProblemError(f"{toml_path}: invalid TOML: {e}") from None
    cfg: ProblemToml = _validated(ProblemToml, data, toml_path, "toml")
    p, ev, evo = cfg.problem, cfg.evaluation, cfg.evolution
    splits = tuple(ev.splits)
    for key, s in (("train_split", ev.train_split), ("test_split", ev.test_split)):
        if s is not None and s not in splits:
            raise ProblemError(
                f"{toml_path}: [evaluation] {key}: split '{s}' is not listed in 'splits' {list(splits)}"
            )
    stages = []
    for i, st in enumerate(ev.cascade):
        if st.split not in splits:
            raise ProblemError(
                f"{toml_path}: [[evaluation.cascade]] #{i + 1} split: split '{st.split}' "
                f"is not listed in 'splits' {list(splits)}"
            )
        stages.append(Stage(split=st.split, threshold=st.threshold))
    stages.append(Stage(split=ev.train_split))
    tree = None
    if cfg.program is not None:
        tree = read_tree(
            root, shown, cfg.program, p.entry, 1024 * ev.max_code_kb, ov.initial_program
        )
    if tree is not None and len(tree.files) > 1:
        seed_path, seed_code, entry = tree.base, tree.code, p.entry
        language = by_suffix(Path(entry).suffix)
    else:
        if tree is not None:  # a program of one file: that file, as ever
            seed_path, seed_code = tree.base / tree.files[0], tree.code
        else:
            seed_path, seed_code = _seed(ov, root, p.entry, f"{toml_path}: [problem] entry", shown)
        entry, language = seed_path.name, _language(seed_path)
    problem = Problem(
        name=p.name,
        description=p.description,
        root=root,
        fmt="native",
        entry=entry,
        seed_code=seed_code,
        metric=p.metric,
        direction=p.direction,
        domain_notes=p.domain_notes,
        timeout_s=ev.timeout_s,
        memory_mb=ev.memory_mb,
        splits=splits,
        train_split=ev.train_split,
        test_split=ev.test_split,
        cascade=tuple(stages),
        feature_dims=tuple(cfg.features.dimensions),
        feature_bins=cfg.features.bins,
        num_islands=evo.num_islands,
        population_size=evo.population_size,
        iterations=evo.iterations,
        edit_format=evo.edit_format,
        hints=tuple(h.strip() for h in p.hints if h.strip()),
        search=cfg.search.settings(),
        data=_data_files(cfg.data, toml_path, list(splits)),
        include=_includes(root, p.include, f"{toml_path} [problem]"),
        max_code_bytes=1024 * ev.max_code_kb,
        env=_env(ev.env, f"{toml_path}: [evaluation] env"),
        seed_path=seed_path,
        resources=Resources(**ev.resources.model_dump()),
        language=language,
        tools=tuple(ev.tools),
        files=tree.files if tree is not None and len(tree.files) > 1 else (),
        fixed_files=tree.fixed if tree is not None and len(tree.files) > 1 else (),
    )
    _check_evaluator(root, shown)
    return problem


def _validated(schema: type[M], data: object, file: Path, style: Style) -> M:
    try:
        return validate(schema, data, str(file), style)
    except SettingsError as e:
        raise ProblemError(str(e)) from None


def _data_files(
    entries: list[DataEntry], toml_path: Path, known: list[str]
) -> tuple[DataFile, ...]:
    """[[data]] entries; `splits` restricts which splits' evaluations can see a file."""
    out = []
    for i, d in enumerate(entries):
        w = f"{toml_path}: [[data]] #{i + 1}"
        if d.path.startswith("/") or ".." in Path(d.path).parts:
            raise ProblemError(f"{w} path: must be relative to the data directory, got {d.path!r}")
        unknown = [s for s in d.splits if s not in known]
        if unknown:
            raise ProblemError(
                f"{w} splits: '{unknown[0]}' is not a split of [evaluation] splits "
                f"({', '.join(known)})"
            )
        out.append(DataFile(path=d.path, url=d.url, sha256=d.sha256, splits=tuple(d.splits)))
    return tuple(out)


def _includes(root: Path, entries: list, where: str) -> tuple[Path, ...]:
    """Shared modules (say, one simulator for two problems): existing .py files, distinct names."""
    paths = []
    for entry in entries:
        path = (root / entry).resolve() if isinstance(entry, str) else None
        if path is None or path.suffix != ".py" or not path.is_file():
            raise ProblemError(
                f"{where}: 'include' entry {entry!r} must name an existing .py file "
                "relative to the problem folder"
            )
        paths.append(path)
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise ProblemError(f"{where}: 'include' files must have distinct names, got {names}")
    return tuple(paths)


def require_blocks(problem: Problem) -> None:
    """ProblemError unless the seed marks what may change: a native problem's seed must (a
    rewrite of its whole file may change the API the evaluator calls), so `evolve check`
    and `evolve run` refuse it without markers. An OpenEvolve folder's unmarked seed
    evolves as a whole file (`problem.whole_file`), as OpenEvolve itself runs it. A program
    of several files has its API in its fixed files and its blocks: an evolving file without
    markers evolves whole."""
    if problem.whole_file or problem.files:
        return
    if not find_blocks(problem.seed_code):
        raise ProblemError(
            f"{problem.seed_file}: no {START} ... {END} markers; mark the code the model may change"
        )


def _read_seed(seed: Path, seed_shown: Path) -> str:
    code = seed.read_text()
    try:
        find_blocks(code)
    except ValueError as e:
        raise ProblemError(f"{seed_shown}: {e}") from None
    if not by_suffix(seed.suffix).is_python:  # its evaluator compiles it: no check of ours
        return code
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ProblemError(
            f"{seed_shown}:{e.lineno}: the seed program does not parse: {e.msg}"
        ) from None
    return code


def _language(seed: Path, named: str | None = None) -> Language:
    """The seed's language: OpenEvolve's `language` where it names one we know, else the
    seed's suffix."""
    return (by_name(named) if named else None) or by_suffix(seed.suffix)


def _env(entries: list[str], where: str) -> dict[str, str]:
    """A folder's env entries, a NAME alone taking this process's value now."""
    try:
        return resolve_env(entries, where)
    except SettingsError as e:
        raise ProblemError(str(e)) from None


def _check_evaluator(root: Path, shown: Path) -> None:
    """Parse evaluator.py without importing it: the controller runs no problem code."""
    path = shown / "evaluator.py"
    if not (root / "evaluator.py").is_file():
        raise ProblemError(f"{shown}: missing evaluator.py")
    try:
        tree = ast.parse((root / "evaluator.py").read_text())
    except SyntaxError as e:
        raise ProblemError(f"{path}:{e.lineno}: does not parse: {e.msg}") from None
    bound = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    bound |= {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    if "evaluate" not in bound:
        raise ProblemError(f"{path}: no top-level function 'evaluate'")


def openevolve_stage_functions(root: Path) -> list[str]:
    tree = ast.parse((root / "evaluator.py").read_text())
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    return [f"evaluate_stage{i}" for i in (1, 2, 3) if f"evaluate_stage{i}" in funcs]


def _load_openevolve(root: Path, shown: Path, ov: Overrides) -> Problem:
    """OpenEvolve's defaults where config.yaml is silent (timeout 300 s, 3 evaluation
    retries); a memory limit, which OpenEvolve does not set, of 4096 MB."""
    read = read_config(root, shown, ov)  # config.yaml, or --config's file
    cfg, cfg_path = read.config, read.shown
    ev, db, llm = cfg.evaluator, cfg.database, cfg.llm
    entry, where = cfg.evolve.initial_program, f"{cfg_path}: evolve.initial_program"
    if entry is None and ov.initial_program is None:
        # OpenEvolve's file_suffix names the seed's suffix (".rs": initial_program.rs)
        entry, where = "initial_program" + (cfg.file_suffix or ".py"), str(shown)
        if not (root / entry).is_file():
            raise ProblemError(
                f"{shown}: no {entry}; name the seed program with "
                "--initial-program PATH (or evolve.initial_program in config.yaml)"
            )
    seed_path, seed_code = _seed(ov, root, entry or "", where, shown)
    language = _language(seed_path, cfg.language)
    _check_evaluator(root, shown)
    stages: list[Stage] = []
    thresholds = ev.cascade_thresholds if ev.cascade_thresholds is not None else [0.5, 0.75, 0.9]
    if ev.cascade_evaluation:
        for i, fn in enumerate(openevolve_stage_functions(root)):
            thr = thresholds[i] if i < len(thresholds) else None
            stages.append(Stage(split="train", function=fn, threshold=thr))
    if not stages:
        stages.append(Stage(split="train", function="evaluate"))
    else:
        # The last stage's threshold gates nothing after it.
        stages[-1] = Stage(split="train", function=stages[-1].function)
    diff_based = cfg.diff_based_evolution
    oe_dims = tuple(db.feature_dimensions or ("complexity", "diversity"))
    problem = Problem(
        name=root.name,
        description=f"OpenEvolve-format problem {root.name}",
        root=root,
        fmt="openevolve",
        entry=seed_path.name,
        seed_code=seed_code,
        metric="combined_score",
        direction="maximize",
        domain_notes=cfg.prompt.system_message or "",
        timeout_s=ev.timeout if ev.timeout is not None else 300.0,
        memory_mb=ev.memory_limit_mb or 4096,
        splits=("train",),
        train_split="train",
        test_split=None,
        cascade=tuple(stages),
        # OpenEvolve calls code length "complexity": the grid's name for it is code_length
        feature_dims=tuple("code_length" if d == "complexity" else d for d in oe_dims),
        openevolve_feature_dims=oe_dims,
        feature_bins=db.bins() or 8,
        num_islands=db.num_islands,
        iterations=cfg.max_iterations,
        edit_format=None if diff_based is None else ("diff" if diff_based else "full"),
        # OpenEvolve's cap is in characters; ours in bytes of UTF-8 (the same for ASCII code)
        max_code_bytes=cfg.max_code_length or 10000,
        llm=llm_defaults(llm),
        env=_env(cfg.evolve.env, f"{cfg_path}: evolve.env"),
        eval_retries=3 if ev.max_retries is None else ev.max_retries,
        cascade_evaluation=ev.cascade_evaluation,
        parallel=ev.parallel_evaluations,
        seed=cfg.random_seed if cfg.random_seed is not None else db.random_seed,
        migration_interval=db.migration_interval,
        search=cfg.evolve.search.settings(),
        seed_path=seed_path,
        config_file=read.path,
        notices=read.notices,
        evaluator_args=dict(ev.evaluator_args or {}),
        language=language,
        tools=tuple(language.tools if cfg.evolve.tools is None else cfg.evolve.tools),
        # OpenEvolve evolves an unmarked seed whole, enforce_evolve_blocks or not (0.4.1's
        # enforce_evolve_blocks() returns the new code as is when the parent has no blocks)
        whole_file=not find_blocks(seed_code),
    )
    return with_keys(problem, cfg, shown)
