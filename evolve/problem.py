"""Load a problem folder (native or OpenEvolve format) into one typed description.

Both formats become the same `Problem`, so the loop, the archive and the
sandboxes never branch on where a problem came from.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel

from evolve.data import DataFile
from evolve.edits.blocks import END, START, find_blocks
from evolve.settings import OpenEvolveConfig, ProblemToml, SettingsError, validate
from evolve.settings.errors import Style
from evolve.settings.native import DataEntry

M = TypeVar("M", bound=BaseModel)


class ProblemError(ValueError):
    """A problem folder is unusable; the message names the file and field."""


@dataclass(frozen=True)
class Stage:
    """One cascade stage: evaluate on `split` (native) or call `function`
    (OpenEvolve); continue only if the score reaches `threshold`."""

    split: str
    function: str | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class LLMDefaults:
    """Model settings a problem folder may carry (OpenEvolve's config.yaml)."""

    models: tuple[tuple[str, float], ...] = ()
    api_base: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Problem:
    name: str
    description: str
    root: Path
    fmt: str  # "native" | "openevolve"
    entry: str  # seed program file name
    seed_code: str
    metric: str
    direction: str  # of the headline metric; the score is always higher-is-better
    domain_notes: str
    timeout_s: float
    memory_mb: int
    splits: tuple[str, ...]
    train_split: str
    test_split: str | None
    cascade: tuple[Stage, ...]
    feature_dims: tuple[str, ...]
    feature_bins: int
    num_islands: int | None = None
    population_size: int | None = None
    iterations: int | None = None
    edit_format: str | None = None  # "diff" | "block" | "full"
    llm: LLMDefaults = field(default_factory=LLMDefaults)
    data: tuple[DataFile, ...] = ()
    include: tuple[Path, ...] = ()  # files of other folders the evaluator imports (kit.include)
    max_code_bytes: int = 64 * 1024  # larger candidates are recorded invalid, never evaluated

    @property
    def prompt_dir(self) -> Path:
        """Per-problem template overrides live here."""
        return self.root / "prompts"


def load_problem(path: str | Path) -> Problem:
    """The folder's Problem, or ProblemError: one line naming the file (as `path` spells
    it), the key and what was expected."""
    shown = Path(path)
    root = shown.resolve()
    if not root.is_dir():
        raise ProblemError(f"{path}: no such problem folder")
    if (root / "problem.toml").is_file():
        return _load_native(root, shown)
    if (root / "initial_program.py").is_file() and (root / "evaluator.py").is_file():
        return _load_openevolve(root, shown)
    raise ProblemError(
        f"{path}: not a problem folder (expected problem.toml, or initial_program.py "
        "+ evaluator.py in OpenEvolve format)"
    )


def _load_native(root: Path, shown: Path) -> Problem:
    toml_path = shown / "problem.toml"
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
    problem = Problem(
        name=p.name,
        description=p.description,
        root=root,
        fmt="native",
        entry=p.entry,
        seed_code=_read_seed(root, p.entry, f"{toml_path}: [problem] entry", shown),
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
        data=_data_files(cfg.data, toml_path, list(splits)),
        include=_includes(root, p.include, f"{toml_path} [problem]"),
        max_code_bytes=1024 * ev.max_code_kb,
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
    """ProblemError unless the seed marks what may change. Without markers every edit
    format but a whole-file rewrite fails on every candidate, and a rewrite may change
    the API the evaluator calls: `evolve check` and `evolve run` refuse such a seed."""
    if not find_blocks(problem.seed_code):
        raise ProblemError(
            f"{problem.root / problem.entry}: no {START} ... {END} markers; "
            "mark the code the model may change"
        )


def _read_seed(root: Path, entry: str, where: str, shown: Path) -> str:
    seed, seed_shown = root / entry, shown / entry
    if not seed.is_file():
        raise ProblemError(f"{where}: '{entry}' does not exist in {shown}")
    code = seed.read_text()
    try:
        find_blocks(code)
    except ValueError as e:
        raise ProblemError(f"{seed_shown}: {e}") from None
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ProblemError(
            f"{seed_shown}:{e.lineno}: the seed program does not parse: {e.msg}"
        ) from None
    return code


def _check_evaluator(root: Path, shown: Path) -> None:
    """Parse evaluator.py without importing it: the controller runs no problem code."""
    path = shown / "evaluator.py"
    if not (root / "evaluator.py").is_file():
        raise ProblemError(f"{shown}: missing evaluator.py")
    try:
        tree = ast.parse((root / "evaluator.py").read_text())
    except SyntaxError as e:
        raise ProblemError(f"{path}:{e.lineno}: does not parse: {e.msg}") from None
    bound = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    bound |= {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    if "evaluate" not in bound:
        raise ProblemError(f"{path}: no top-level function 'evaluate'")


def _yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's error in one line: where, and what it found."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())


def openevolve_stage_functions(root: Path) -> list[str]:
    tree = ast.parse((root / "evaluator.py").read_text())
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return [f"evaluate_stage{i}" for i in (1, 2, 3) if f"evaluate_stage{i}" in funcs]


def _load_openevolve(root: Path, shown: Path) -> Problem:
    cfg_path = shown / "config.yaml"
    raw: object = {}
    if (root / "config.yaml").is_file():
        try:
            raw = yaml.safe_load((root / "config.yaml").read_text()) or {}
        except yaml.YAMLError as e:
            raise ProblemError(f"{cfg_path}: invalid YAML: {_yaml_problem(e)}") from None
    cfg: OpenEvolveConfig = _validated(OpenEvolveConfig, raw, cfg_path, "yaml")
    ev, db, llm = cfg.evaluator, cfg.database, cfg.llm
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
    return Problem(
        name=root.name,
        description=f"OpenEvolve-format problem {root.name}",
        root=root,
        fmt="openevolve",
        entry="initial_program.py",
        seed_code=_read_seed(root, "initial_program.py", str(shown), shown),
        metric="combined_score",
        direction="maximize",
        domain_notes=cfg.prompt.system_message or "",
        timeout_s=ev.timeout if ev.timeout is not None else 60.0,
        memory_mb=2048,
        splits=("train",),
        train_split="train",
        test_split=None,
        cascade=tuple(stages),
        # OpenEvolve calls code length "complexity".
        feature_dims=tuple(
            "code_length" if d == "complexity" else d
            for d in (db.feature_dimensions or ("code_length", "diversity"))
        ),
        feature_bins=db.feature_bins if isinstance(db.feature_bins, int) else 8,
        num_islands=db.num_islands,
        population_size=db.population_size,
        iterations=cfg.max_iterations,
        edit_format=None if diff_based is None else ("diff" if diff_based else "full"),
        # OpenEvolve's cap is in characters; ours in bytes of UTF-8 (the same for ASCII code)
        max_code_bytes=cfg.max_code_length or 10000,
        llm=LLMDefaults(
            models=llm.model_list(),
            api_base=llm.api_base,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
        ),
    )
