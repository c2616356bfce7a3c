"""A LEVI folder (problem.py + run.py), read with `ast` and never executed.

LEVI 0.1.1 is a library: an example's run.py calls `levi.evolve_code(PROBLEM_DESCRIPTION,
function_signature=..., seed_program=..., score_fn=..., inputs=..., pipeline=
levi.PipelineConfig(eval_timeout=...), budget_dollars=..., ...)` with names it imports from
problem.py. What evolve needs is read from that call (or, without run.py, from problem.py's
conventional names): the seed, the signature (whose function score_fn is handed), the name
of the scoring function and of its inputs, and the run settings that are constants. The
host reads it to build the problem; the sandbox's scorer (levi_score.py) reads it again to
know what to call, so both agree without a new request field.

Stdlib only: it runs inside the sandbox too.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Any

PROBLEM = "problem.py"
RUNNER = "run.py"
# evolve_code's keywords holding problem.py's objects (the others are run settings)
OBJECTS = ("problem_description", "function_signature", "seed_program", "score_fn", "inputs")
CONVENTION = {  # problem.py's names when run.py does not say
    "problem_description": "PROBLEM_DESCRIPTION",
    "function_signature": "FUNCTION_SIGNATURE",
    "seed_program": "SEED_PROGRAM",
    "score_fn": "score_fn",
}


class LeviFolderError(ValueError):
    """The folder cannot be read as LEVI reads it; one line naming the file and name."""


@dataclass(frozen=True)
class LeviFolder:
    """`fn_name`: the function score_fn gets (LEVI's extract_fn_name of the signature);
    `inputs`: problem.py's name for score_fn's inputs, with "()" when run.py calls it;
    `settings`: run.py's other constant keywords (pipeline=PipelineConfig(...) a dict);
    `computed`: keywords whose value only running run.py would tell."""

    description: str
    signature: str | None
    seed: str | None
    score_fn: str
    fn_name: str
    inputs: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    computed: tuple[tuple[str, int], ...] = ()  # (keyword, line)
    has_runner: bool = False


def is_levi(root: str) -> bool:
    """problem.py defines a score_fn (LEVI's name, or the one run.py passes)."""
    return os.path.isfile(os.path.join(root, PROBLEM))


def read(root: str, shown: str | None = None) -> LeviFolder:
    """The folder's LEVI settings; LeviFolderError: one line naming the file."""
    shown = shown or root
    problem = _parse(root, shown, PROBLEM)
    if problem is None:
        raise LeviFolderError(f"{os.path.join(shown, PROBLEM)}: no such file")
    defs = _bindings(problem)
    runner = _parse(root, shown, RUNNER)
    call = _evolve_code_call(runner) if runner is not None else None
    run_names = _bindings(runner) if runner is not None else {}
    found: dict[str, ast.expr] = {}
    settings: dict[str, Any] = {}
    computed: list[tuple[str, int]] = []
    if call is not None:
        if call.args:
            found["problem_description"] = call.args[0]
        for kw in call.keywords:
            if kw.arg is None:
                computed.append(("**", kw.value.lineno))
            elif kw.arg in OBJECTS:
                found[kw.arg] = kw.value
            else:
                value = _constant(kw.value, run_names)
                if value is _UNKNOWN:
                    computed.append((kw.arg, kw.value.lineno))
                else:
                    settings[kw.arg] = value
    rshown = os.path.join(shown, RUNNER)
    pshown = os.path.join(shown, PROBLEM)

    def text(key: str) -> str | None:
        node = found.get(key)
        if node is None:
            return _string(defs.get(CONVENTION[key]))
        value = _constant(node, run_names)
        if isinstance(value, str):
            return value
        if isinstance(node, ast.Name):  # a name problem.py binds (None: not to a string)
            return _string(defs.get(node.id))
        raise LeviFolderError(
            f"{rshown}:{node.lineno}: {key}=: expected a string or a name problem.py binds "
            "to one (it is read, never run)"
        )

    score_fn = _name(found.get("score_fn"), rshown, "score_fn") or "score_fn"
    if score_fn not in defs:
        raise LeviFolderError(f"{pshown}: no top-level {score_fn} (LEVI's scoring function)")
    inputs = _inputs(found.get("inputs"), defs, rshown, pshown)
    signature = text("function_signature")
    return LeviFolder(
        description=(text("problem_description") or "").strip(),
        signature=signature.strip() if signature else None,
        seed=text("seed_program"),
        score_fn=score_fn,
        fn_name=fn_name(signature or ""),
        inputs=inputs,
        settings=settings,
        computed=tuple(computed),
        has_runner=runner is not None,
    )


def fn_name(signature: str) -> str:
    """The function a signature defines; 'solve' without one (as LEVI 0.1.1)."""
    found = re.search(r"def\s+(\w+)\s*\(", signature)
    return found.group(1) if found else "solve"


def _parse(root: str, shown: str, name: str) -> ast.Module | None:
    path = os.path.join(root, name)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return ast.parse(f.read())
    except SyntaxError as e:
        raise LeviFolderError(
            f"{os.path.join(shown, name)}:{e.lineno}: does not parse: {e.msg}"
        ) from None


def _bindings(tree: ast.Module) -> dict[str, ast.expr | ast.stmt]:
    """Top-level names: assignments (their value), functions and classes (the statement)."""
    out: dict[str, ast.expr | ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node.value or node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = node
    return out


def _evolve_code_call(tree: ast.Module) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name == "evolve_code":
                return node
    return None


class _Unknown:
    pass


_UNKNOWN = _Unknown()


def _constant(node: ast.expr, names: dict, depth: int = 0) -> Any:
    """A literal, a name bound to one in run.py, or a config call's constant keywords
    (PipelineConfig(eval_timeout=300) as {"eval_timeout": 300}); else _UNKNOWN."""
    if depth > 20:
        return _UNKNOWN
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), ast.expr):
        return _constant(names[node.id], names, depth + 1)
    if isinstance(node, ast.Call) and not node.args:
        items = {kw.arg: _constant(kw.value, names, depth + 1) for kw in node.keywords}
        if None in items or any(v is _UNKNOWN for v in items.values()):
            return _UNKNOWN
        return items
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNKNOWN


def _string(node: object) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _name(node: ast.expr | None, where: str, key: str) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Name):
        return node.id
    raise LeviFolderError(f"{where}:{node.lineno}: {key}=: expected a name problem.py defines")


def _inputs(node: ast.expr | None, defs: dict, rshown: str, pshown: str) -> str | None:
    """inputs=NAME or inputs=NAME() of problem.py; None when run.py passes none."""
    if node is None:
        return None
    call = isinstance(node, ast.Call) and not node.args and not node.keywords
    target = node.func if isinstance(node, ast.Call) and call else node
    if not isinstance(target, ast.Name):
        raise LeviFolderError(
            f"{rshown}:{node.lineno}: inputs=: expected a name problem.py defines, or a call "
            "of one without arguments"
        )
    if target.id not in defs:
        raise LeviFolderError(f"{pshown}: no top-level {target.id} (run.py's inputs=)")
    return target.id + ("()" if call else "")
