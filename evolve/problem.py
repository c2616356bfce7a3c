"""Load a problem folder (native or OpenEvolve format) into one typed description.

Both formats become the same `Problem`, so the loop, the archive and the
sandboxes never branch on where a problem came from.
"""

from __future__ import annotations

import ast
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from evolve.data import DataFile
from evolve.edits.blocks import find_blocks


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
    root = Path(path).resolve()
    if not root.is_dir():
        raise ProblemError(f"{path}: no such problem folder")
    if (root / "problem.toml").is_file():
        return _load_native(root)
    if (root / "initial_program.py").is_file() and (root / "evaluator.py").is_file():
        return _load_openevolve(root)
    raise ProblemError(
        f"{path}: not a problem folder (expected problem.toml, or initial_program.py "
        "+ evaluator.py in OpenEvolve format)"
    )


def _get(table: dict, key: str, typ, where: str, default=None, required: bool = False):
    if key not in table:
        if required:
            raise ProblemError(f"{where}: missing required field '{key}'")
        return default
    value = table[key]
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, typ) or isinstance(value, bool) and typ is not bool:
        raise ProblemError(f"{where}: field '{key}' must be {typ.__name__}, got {value!r}")
    return value


def _load_native(root: Path) -> Problem:
    toml_path = root / "problem.toml"
    try:
        data = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ProblemError(f"{toml_path}: invalid TOML: {e}") from None
    p = data.get("problem")
    if not isinstance(p, dict):
        raise ProblemError(f"{toml_path}: missing [problem] table")
    where = f"{toml_path} [problem]"
    name = _get(p, "name", str, where, required=True)
    entry = _get(p, "entry", str, where, required=True)
    direction = _get(p, "direction", str, where, default="maximize")
    if direction not in ("maximize", "minimize"):
        raise ProblemError(f"{where}: field 'direction' must be 'maximize' or 'minimize'")
    ev = data.get("evaluation", {})
    where_ev = f"{toml_path} [evaluation]"
    splits = tuple(_get(ev, "splits", list, where_ev, default=["train"]))
    train = _get(ev, "train_split", str, where_ev, default="train")
    test = _get(ev, "test_split", str, where_ev, default=None)
    for s in (train, test):
        if s is not None and s not in splits:
            raise ProblemError(f"{where_ev}: split '{s}' is not listed in 'splits' {list(splits)}")
    stages = []
    for i, st in enumerate(_get(ev, "cascade", list, where_ev, default=[])):
        w = f"{toml_path} [[evaluation.cascade]] #{i + 1}"
        split = _get(st, "split", str, w, required=True)
        if split not in splits:
            raise ProblemError(f"{w}: split '{split}' is not listed in 'splits'")
        stages.append(Stage(split=split, threshold=_get(st, "threshold", float, w)))
    stages.append(Stage(split=train))
    feats = data.get("features", {})
    evo = data.get("evolution", {})
    problem = Problem(
        name=name,
        description=_get(p, "description", str, where, default=""),
        root=root,
        fmt="native",
        entry=entry,
        seed_code=_read_seed(root, entry, where),
        metric=_get(p, "metric", str, where, default="score"),
        direction=direction,
        domain_notes=_get(p, "domain_notes", str, where, default=""),
        timeout_s=_positive(
            _get(ev, "timeout_s", float, where_ev, default=60.0), "timeout_s", where_ev
        ),
        memory_mb=int(
            _positive(_get(ev, "memory_mb", int, where_ev, default=2048), "memory_mb", where_ev)
        ),
        splits=splits,
        train_split=train,
        test_split=test,
        cascade=tuple(stages),
        feature_dims=tuple(
            _get(
                feats,
                "dimensions",
                list,
                f"{toml_path} [features]",
                default=["code_length", "diversity"],
            )
        ),
        feature_bins=int(_get(feats, "bins", int, f"{toml_path} [features]", default=8)),
        num_islands=_get(evo, "num_islands", int, f"{toml_path} [evolution]"),
        population_size=_get(evo, "population_size", int, f"{toml_path} [evolution]"),
        iterations=_get(evo, "iterations", int, f"{toml_path} [evolution]"),
        edit_format=_get(evo, "edit_format", str, f"{toml_path} [evolution]"),
        data=_data_files(data.get("data", []), toml_path, list(splits)),
        include=_includes(root, _get(p, "include", list, where, default=[]), where),
        max_code_bytes=1024
        * int(_positive(_get(ev, "max_code_kb", int, where_ev, default=64), "max_code_kb", where_ev)),
    )
    _check_evaluator(root)
    return problem


def _data_files(entries, toml_path: Path, known_splits: list[str]) -> tuple[DataFile, ...]:
    """[[data]] entries; `splits` restricts which splits' evaluations can see a file."""
    if not isinstance(entries, list):
        raise ProblemError(f"{toml_path}: 'data' must be an array of tables ([[data]])")
    out = []
    for i, d in enumerate(entries):
        w = f"{toml_path} [[data]] #{i + 1}"
        path = _get(d, "path", str, w, required=True)
        if path.startswith("/") or ".." in Path(path).parts:
            raise ProblemError(f"{w}: 'path' must be relative to the data directory, got {path!r}")
        splits = _get(d, "splits", list, w, default=[])
        if not all(isinstance(x, str) and x in known_splits for x in splits):
            raise ProblemError(
                f"{w}: 'splits' must list splits of [evaluation] splits "
                f"({', '.join(known_splits)}), got {splits!r}"
            )
        out.append(
            DataFile(
                path=path,
                url=_get(d, "url", str, w),
                sha256=_get(d, "sha256", str, w),
                splits=tuple(splits),
            )
        )
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


def _positive(value, key: str, where: str):
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise ProblemError(f"{where}: field '{key}' must be > 0, got {value}")
    return value


def _read_seed(root: Path, entry: str, where: str) -> str:
    seed = root / entry
    if not seed.is_file():
        raise ProblemError(f"{where}: entry '{entry}' does not exist in {root}")
    code = seed.read_text()
    try:
        find_blocks(code)
    except ValueError as e:
        raise ProblemError(f"{seed}: {e}") from None
    try:
        ast.parse(code)
    except SyntaxError as e:
        raise ProblemError(f"{seed}:{e.lineno}: the seed program does not parse: {e.msg}") from None
    return code


def _check_evaluator(root: Path) -> None:
    """Parse evaluator.py without importing it: the controller runs no problem code."""
    path = root / "evaluator.py"
    if not path.is_file():
        raise ProblemError(f"{root}: missing evaluator.py")
    try:
        tree = ast.parse(path.read_text())
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


def openevolve_stage_functions(root: Path) -> list[str]:
    tree = ast.parse((root / "evaluator.py").read_text())
    funcs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return [f"evaluate_stage{i}" for i in (1, 2, 3) if f"evaluate_stage{i}" in funcs]


def _load_openevolve(root: Path) -> Problem:
    cfg_path = root / "config.yaml"
    cfg: dict = {}
    if cfg_path.is_file():
        try:
            cfg = yaml.safe_load(cfg_path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ProblemError(f"{cfg_path}: invalid YAML: {e}") from None
        if not isinstance(cfg, dict):
            raise ProblemError(f"{cfg_path}: expected a mapping at the top level")
    ev = cfg.get("evaluator") or {}
    db = cfg.get("database") or {}
    llm = cfg.get("llm") or {}
    where = str(cfg_path)
    _check_evaluator(root)
    stages: list[Stage] = []
    thresholds = list(ev.get("cascade_thresholds") or [0.5, 0.75, 0.9])
    if ev.get("cascade_evaluation", True):
        for i, fn in enumerate(openevolve_stage_functions(root)):
            thr = float(thresholds[i]) if i < len(thresholds) else None
            stages.append(Stage(split="train", function=fn, threshold=thr))
    if not stages:
        stages.append(Stage(split="train", function="evaluate"))
    else:
        # The last stage's threshold gates nothing after it.
        stages[-1] = Stage(split="train", function=stages[-1].function)
    models = tuple(
        (str(m["name"]), float(m.get("weight", 1.0)))
        for m in (llm.get("models") or [])
        if isinstance(m, dict) and "name" in m
    )
    diff_based = cfg.get("diff_based_evolution")
    system_msg = (cfg.get("prompt") or {}).get("system_message") or ""
    return Problem(
        name=root.name,
        description=f"OpenEvolve-format problem {root.name}",
        root=root,
        fmt="openevolve",
        entry="initial_program.py",
        seed_code=_read_seed(root, "initial_program.py", where),
        metric="combined_score",
        direction="maximize",
        domain_notes=system_msg,
        timeout_s=_positive(float(ev.get("timeout", 60)), "evaluator.timeout", where),
        memory_mb=2048,
        splits=("train",),
        train_split="train",
        test_split=None,
        cascade=tuple(stages),
        # OpenEvolve calls code length "complexity".
        feature_dims=tuple(
            "code_length" if d == "complexity" else str(d)
            for d in (db.get("feature_dimensions") or ("code_length", "diversity"))
        ),
        feature_bins=int(db.get("feature_bins") or 8)
        if not isinstance(db.get("feature_bins"), dict)
        else 8,
        num_islands=db.get("num_islands"),
        population_size=db.get("population_size"),
        iterations=cfg.get("max_iterations"),
        edit_format=None if diff_based is None else ("diff" if diff_based else "full"),
        # OpenEvolve's cap is in characters; ours in bytes of UTF-8 (the same for ASCII code)
        max_code_bytes=int(cfg.get("max_code_length") or 10000),
        llm=LLMDefaults(
            models=models,
            api_base=llm.get("api_base"),
            temperature=llm.get("temperature"),
            max_tokens=llm.get("max_tokens"),
        ),
    )
