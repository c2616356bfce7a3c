"""One line per bad settings file: pydantic's errors, said the way a user reads the file.

pydantic reports every error with a location tuple and a machine type; a user wants the
file, the key as written there (`[evaluation] timeout_s` in TOML, `llm.temperature` in
YAML), what was expected and what was found, and for a typo the key meant.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, model_validator

Style = Literal["toml", "yaml", "prices", "settings", "flags"]  # settings: keyword arguments


class UsageError(ValueError):
    """Bad input from the user (a setting, a file, a run id): one line. The Python API
    raises it; the command line prints it and exits 2."""


class SettingsError(UsageError):
    """A settings file or value is unusable; the message is one line naming the file and key."""


class Section(BaseModel):
    """A table of a settings file: unknown keys are errors, types are not coerced.

    `ignored` maps keys other tools (OpenEvolve) define that are accepted and unused to
    why evolve does without them: a real config keeps working, the user learns what it
    does not do here, and a typo still fails with a suggestion."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ignored: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _drop_ignored(cls, data: Any) -> Any:
        if data is None:  # `llm:` with nothing under it in YAML
            return {}
        if isinstance(data, dict) and cls.ignored:
            return {k: v for k, v in data.items() if k not in cls.ignored}
        return data


def validate(schema: type[BaseModel], data: Any, file: str, style: Style) -> Any:
    """`schema.model_validate(data)`, or SettingsError with one line naming `file`."""
    try:
        return schema.model_validate(data)
    except ValidationError as e:
        raise SettingsError(one_line(e, file, schema, style)) from None


def one_line(e: ValidationError, file: str, schema: type[BaseModel], style: Style) -> str:
    """The first error (a typo first: it often explains the others), and how many follow."""
    errors = sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden")
    first = errors[0]
    if first["type"] == "extra_forbidden":  # `nmae`: the missing `name` is the same mistake
        *parent, key = first["loc"]
        meant = difflib.get_close_matches(str(key), _keys_at(schema, tuple(parent)), n=1)
        errors = [
            err
            for err in errors
            if not (err["type"] == "missing" and list(err["loc"]) == [*parent, *meant])
        ]
    n = len(errors) - 1
    more = f" (and {n} more error{'s' if n > 1 else ''})" if n else ""
    return f"{file}: {_describe(first, schema, style)}{more}"


def _describe(err: Any, schema: type[BaseModel], style: Style) -> str:
    loc: tuple = err["loc"]
    kind: str = err["type"]
    if kind == "extra_forbidden":
        return _unknown(loc, err["input"], schema, style)
    where = _where(loc, style, schema)
    if kind == "missing" and style == "prices" and len(loc) == 2:
        return (
            f"model '{loc[0]}' must have 'input' and 'output' prices per 1M tokens "
            f"(missing '{loc[1]}')"
        )
    if kind == "missing":
        parent, key = _where(loc[:-1], style, schema), loc[-1]
        table = style == "toml" and _is_table(schema, loc)
        what = f"table [{key}]" if table else f"key '{key}'"
        sep = " " if style == "toml" else ": "
        return f"{parent + sep if parent else ''}missing required {what}"
    got = f"got {_shown(err['input'], style)}"
    if style in ("settings", "flags") and kind == "value_error":  # its message shows the value
        return f"{where}: {_expected(err, style, schema)}"
    if not where:  # the file is a list or a scalar
        return f"{_expected(err, style, schema)} at the top level, {got}"
    return f"{where}: {_expected(err, style, schema)}, {got}"


def _unknown(loc: tuple, value: Any, schema: type[BaseModel], style: Style) -> str:
    *parent, key = loc
    known = _keys_at(schema, tuple(parent))
    close = difflib.get_close_matches(str(key), known, n=1)
    top_table = style == "toml" and not parent and isinstance(value, dict | list)
    if top_table:
        hint = f" (did you mean [{close[0]}]?)" if close else f" (known: {_listed(known)})"
        return f"unknown table [{key}]{hint}"
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    if style == "toml" and not parent:
        hint = hint or f" (keys go in a table: {_listed(known)})"
    where = _where(tuple(parent), style, schema)
    sep = " " if style == "toml" else ": "  # `[evaluation] unknown key`, `llm: unknown key`
    return f"{where + sep if where else ''}unknown key '{key}'{hint}"


def _where(loc: tuple, style: Style, schema: type[BaseModel]) -> str:
    """`[evaluation] timeout_s`, `[[data]] #2 path` (TOML); `llm.models[0].name` (YAML);
    `model 'gpt-x': input` (a price table, keyed by model name); `--meta-interval` (a flag)."""
    if style == "flags" and loc:
        flag = "--" + str(loc[0]).replace("_", "-")
        return flag + "".join(f"[{p}]" for p in loc[1:])
    if style in ("yaml", "settings"):
        out = ""
        for part in loc:
            out += f"[{part}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
        return out
    if style == "prices":
        if not loc:
            return ""
        rest = ".".join(str(p) for p in loc[1:])
        return f"model '{loc[0]}'" + (f": {rest}" if rest else "")
    if not loc:
        return ""
    parts = [str(p) for p in loc]
    if len(loc) >= 2 and isinstance(loc[1], int):  # [[data]] #2 path
        head, tail = f"[[{parts[0]}]] #{loc[1] + 1}", loc[2:]
    elif len(loc) >= 3 and isinstance(loc[2], int) and _keys_at(schema, loc[:3]):
        # an array of tables inside a table: [[evaluation.cascade]] #1 split
        head, tail = f"[[{parts[0]}.{parts[1]}]] #{loc[2] + 1}", loc[3:]
    else:
        head, tail = f"[{parts[0]}]", loc[1:]
    key = ""
    for part in tail:
        key += f"[{part}]" if isinstance(part, int) else f"{'.' if key else ''}{part}"
    return f"{head} {key}" if key else head


def _expected(err: Any, style: Style, schema: type[BaseModel]) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    bounds = {
        "greater_than": ("> ", "gt"),
        "greater_than_equal": (">= ", "ge"),
        "less_than": ("< ", "lt"),
        "less_than_equal": ("<= ", "le"),
    }
    if kind in bounds:
        op, key = bounds[kind]
        noun = "an integer" if _annotation_at(schema, err["loc"]) is int else "a number"
        return f"expected {noun} {op}{ctx[key]:g}"
    if kind == "literal_error":
        return f"expected one of {ctx['expected']}"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length', 1)} item(s)"
    mapping = "a table" if style == "toml" else "a mapping"
    names = {
        "float_type": "a number",
        "float_parsing": "a number",
        "finite_number": "a finite number",
        "int_type": "an integer",
        "int_parsing": "an integer",
        "int_from_float": "an integer",
        "string_type": "a string",
        "bool_type": "true or false",
        "bool_parsing": "true or false",
        "list_type": "a list",
        "tuple_type": "a list",
        "dict_type": mapping,
        "model_type": mapping,
        "model_attributes_type": mapping,
    }
    return f"expected {names.get(kind, err['msg'].lower())}"


def _shown(value: Any, style: Style = "toml") -> str:
    """The value as found; a boolean as the file spells it (`true`; `True` in Python)."""
    spoken = isinstance(value, bool) and style not in ("settings", "flags")
    text = str(value).lower() if spoken else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _listed(names: list[str]) -> str:
    return ", ".join(f"[{n}]" for n in names)


def _inner_model(t: Any) -> type[BaseModel] | None:
    """The first pydantic model inside an annotation (`list[Stage] | None` -> Stage)."""
    if isinstance(t, type) and issubclass(t, BaseModel):
        return t
    for arg in get_args(t):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _model_at(schema: type[BaseModel], path: tuple) -> type[BaseModel] | None:
    """The model of the table at `path` (list indices and user-named keys pass through)."""
    t: Any = schema
    for part in path:
        model = _inner_model(t)
        if model is None:
            return None
        if issubclass(model, RootModel):  # a mapping keyed by user names: `part` is one
            t = model.model_fields["root"].annotation
            continue
        if isinstance(part, int):  # an item of a list: the same element model
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        t = field.annotation
    model = _inner_model(t)
    return None if model is None or issubclass(model, RootModel) else model


def _keys_at(schema: type[BaseModel], path: tuple) -> list[str]:
    """The keys the table at `path` accepts (its fields and its ignored keys)."""
    model = _model_at(schema, path)
    if model is None:
        return []
    ignored = model.ignored if issubclass(model, Section) else {}
    return [*model.model_fields, *sorted(ignored)]


def _annotation_at(schema: type[BaseModel], loc: tuple) -> Any:
    """The type of the key at `loc` without None (`int | None` -> int), if known."""
    model = _model_at(schema, loc[:-1]) if loc else None
    field = model.model_fields.get(str(loc[-1])) if model is not None else None
    if field is None:
        return None
    args = [a for a in get_args(field.annotation) if a is not type(None)]
    t = args[0] if len(args) == 1 else field.annotation
    return get_args(t)[0] if get_origin(t) is Annotated else t


def _is_table(schema: type[BaseModel], loc: tuple) -> bool:
    """Whether the missing `loc` is a table (a model) rather than a plain key."""
    if len(loc) != 1:
        return False
    field = schema.model_fields.get(str(loc[0]))
    return field is not None and _inner_model(field.annotation) is not None
