"""Keys of an OpenEvolve config.yaml that no OpenEvolve version knows.

OpenEvolve loads its config with dacite, non-strict: an unknown key is dropped without a
word, so real configs carry some (a top-level `parallel_evaluations: 1` in every config
of its examples/alphaevolve_math_problems, a `novelty:` section). evolve drops them too,
so such a folder runs, but says so once per key, with the key meant where one is close
(at the same level, or the same name at another level); --strict-config makes each an
error. An unknown section is one key, not one per key under it. evolve's own `evolve:`
section is not OpenEvolve's and stays strict (the schema reports its typos).
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import dataclass
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from evolve.settings.errors import Section, _inner_model

STRICT_OWN = ("evolve",)  # top-level sections that are evolve's, not OpenEvolve's


@dataclass(frozen=True)
class UnknownKey:
    """A key the schema does not know: where it is in the file, and the key meant if any."""

    path: tuple[str | int, ...]  # ("llm", "models", 0, "nmae")
    meant: str | None = None  # dotted, as the user would write it: "evaluator.parallel_evaluations"

    @property
    def dotted(self) -> str:
        return dotted(self.path)

    def line(self, file: str, strict: bool) -> str:
        """One line naming the file and the key: an error (strict) or a warning."""
        hint = f" (did you mean '{self.meant}'?)" if self.meant else ""
        if strict:
            return f"{file}: unknown key '{self.dotted}'{hint}"
        return (
            f"warning: {file}: unknown key '{self.dotted}' ignored{hint}, "
            "as OpenEvolve ignores it (--strict-config refuses it)"
        )


def dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out


def unknown_keys(schema: type[BaseModel], data: Any) -> list[UnknownKey]:
    """Every key of `data` that `schema` neither reads nor lists as ignored, in file order."""
    known = _known(schema)
    found: list[UnknownKey] = []
    _walk(schema, data, (), known, found)
    return found


def without(data: Any, unknown: list[UnknownKey]) -> Any:
    """A copy of `data` without the `unknown` keys (what OpenEvolve's dacite would read)."""
    if not unknown:
        return data
    out = copy.deepcopy(data)
    for u in unknown:
        parent: Any = out
        for part in u.path[:-1]:
            parent = parent[part]
        del parent[u.path[-1]]
    return out


def _walk(
    model: type[BaseModel],
    data: Any,
    path: tuple[str | int, ...],
    known: list[tuple[str, bool]],
    found: list[UnknownKey],
) -> None:
    if not isinstance(data, dict):
        return  # a wrong type: the schema says so
    ignored = model.ignored if issubclass(model, Section) else {}
    for key, value in data.items():
        if not path and key in STRICT_OWN:
            continue
        if not isinstance(key, str) or (key not in model.model_fields and key not in ignored):
            here = (*path, key)
            found.append(UnknownKey(here, _meant(model, here, isinstance(value, dict), known)))
            continue
        field = model.model_fields.get(key)
        inner = _inner_model(field.annotation) if field is not None else None
        if inner is None or key in ignored:
            continue
        if isinstance(value, list):  # a list of tables: llm.models
            for i, item in enumerate(value):
                _walk(inner, item, (*path, key, i), known, found)
        else:
            _walk(inner, value, (*path, key), known, found)


def _meant(
    model: type[BaseModel], path: tuple, section: bool, known: list[tuple[str, bool]]
) -> str | None:
    """The same name at another level (exact), else a close key at this level, else a
    close key anywhere; a section is only ever taken for a section."""
    key = str(path[-1])
    prefix = dotted(path[:-1])
    candidates = [k for k, is_section in known if is_section == section]
    for k in candidates:
        if k.rsplit(".", 1)[-1] == key:  # never this level's: the key is unknown here
            return _with_index(k, path)
    ignored = model.ignored if issubclass(model, Section) else {}
    here = [*model.model_fields, *ignored]
    close = difflib.get_close_matches(key, here, n=1)
    if close and (_is_section(model, close[0]) == section):
        return f"{prefix}.{close[0]}" if prefix else close[0]
    leaves = {k.rsplit(".", 1)[-1]: k for k in candidates}
    close = difflib.get_close_matches(key, list(leaves), n=1, cutoff=0.8)
    return _with_index(leaves[close[0]], path) if close else None


def _with_index(key: str, path: tuple) -> str:
    """`llm.models[*].name` as the user's item: `llm.models[0].name` where the path has one."""
    index = next((p for p in path if isinstance(p, int)), None)
    return key.replace("[*]", f"[{index}]" if index is not None else "[*]")


def _is_section(model: type[BaseModel], name: str) -> bool:
    field = model.model_fields.get(name)
    return field is not None and _inner_model(field.annotation) is not None


def _known(schema: type[BaseModel], prefix: str = "") -> list[tuple[str, bool]]:
    """(dotted key, is a section) for every key the schema knows, OpenEvolve's only."""
    out: list[tuple[str, bool]] = []
    ignored = schema.ignored if issubclass(schema, Section) else {}
    for name in [*schema.model_fields, *ignored]:
        if not prefix and name in STRICT_OWN:
            continue
        field = schema.model_fields.get(name)
        inner = _inner_model(field.annotation) if field is not None else None
        key = prefix + name
        if field is None or inner is None:
            out.append((key, False))
            continue
        is_list = any(
            get_origin(a) is list for a in (field.annotation, *get_args(field.annotation))
        )
        out.append((key, not is_list))
        out += _known(inner, key + ("[*]." if is_list else "."))
    return out
