"""A ShinkaEvolve folder's run_evo.py, read with `ast` and never executed.

ShinkaEvolve's examples without a YAML config name their settings in code:
`EvolutionConfig(init_program_path="initial.f90", language="fortran", ...)`,
`DatabaseConfig(num_islands=...)`, `LocalJobConfig(time="00:03:00")` and
`ShinkaEvolveRunner(max_evaluation_jobs=...)`. Their keyword values that are constants
(literals, or names bound to literals at the module's top level) become a mapping in a
shinka_*.yaml's shape, which evolve/settings/shinka.py reads as it reads a YAML file; a
value computed at run time is reported, never guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECTIONS = {"EvolutionConfig": "evo_config", "DatabaseConfig": "db_config"}
RUNNER_KEYS = ("max_evaluation_jobs", "max_proposal_jobs", "max_db_workers")


class _Unknown:
    """A value only running the code would tell."""


UNKNOWN = _Unknown()


@dataclass(frozen=True)
class RunEvo:
    """`raw`: the constant keywords, shaped as a shinka_*.yaml; `time_s`: LocalJobConfig's
    time limit; `computed`: the keywords whose value is not a constant (not read)."""

    raw: dict[str, Any]
    time_s: float | None = None
    computed: tuple[str, ...] = ()

    @property
    def names_settings(self) -> bool:
        """Whether it names any setting an EvolutionConfig or DatabaseConfig call holds."""
        return any(self.raw.get(s) for s in SECTIONS.values()) or any(
            k in self.raw for k in RUNNER_KEYS
        )


def read_run_evo(path: Path, shown: Path) -> RunEvo | None:
    """run_evo.py's settings; None without the file; ValueError: one line naming the file
    and line when it does not parse or its job time is not HH:MM:SS."""
    if not path.is_file():
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError as e:
        raise ValueError(f"{shown}:{e.lineno}: does not parse: {e.msg}") from None
    names = _constants(tree)
    raw: dict[str, Any] = {}
    computed: list[str] = []
    time_s = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = _callee(node)
        section = SECTIONS.get(callee)
        for kw in node.keywords:
            if kw.arg is None:  # **config: what a YAML file holds, read from the file
                continue
            if callee == "ShinkaEvolveRunner" and kw.arg not in RUNNER_KEYS:
                continue
            if callee not in SECTIONS and callee not in ("ShinkaEvolveRunner", "LocalJobConfig"):
                continue
            value = _value(kw.value, names)
            where = f"{section}.{kw.arg}" if section else kw.arg
            if isinstance(value, _Unknown):
                computed.append(f"{callee}({kw.arg}=...) at line {kw.value.lineno}")
            elif callee == "LocalJobConfig":
                if kw.arg == "time" and value is not None:
                    time_s = _seconds(value, f"{shown}:{kw.value.lineno}: LocalJobConfig time")
            elif section:
                raw.setdefault(section, {})[kw.arg] = value
            elif value is not None:
                raw[where] = value
    return RunEvo(raw, time_s, tuple(computed))


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Top-level `NAME = value` bindings (the last one wins, as at run time)."""
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            out[node.target.id] = node.value
    return out


def _value(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> Any:
    """The constant `node` stands for, or UNKNOWN."""
    if depth > 20:
        return UNKNOWN
    if isinstance(node, ast.Name) and node.id in names:
        return _value(names[node.id], names, depth + 1)
    if isinstance(node, ast.Call) and _callee(node) == "dict" and not node.args:
        items = {kw.arg: _value(kw.value, names, depth + 1) for kw in node.keywords if kw.arg}
        ok = len(items) == len(node.keywords)
        return items if ok and not any(isinstance(v, _Unknown) for v in items.values()) else UNKNOWN
    if isinstance(node, ast.List | ast.Tuple):
        items_l = [_value(e, names, depth + 1) for e in node.elts]
        return UNKNOWN if any(isinstance(v, _Unknown) for v in items_l) else items_l
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def _seconds(value: object, where: str) -> float:
    """ShinkaEvolve's job time "HH:MM:SS" in seconds."""
    parts = value.split(":") if isinstance(value, str) else []
    if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{where}: expected 'HH:MM:SS', got {value!r:.80}")
    h, m, s = (int(p) for p in parts)
    return float(h * 3600 + m * 60 + s)
