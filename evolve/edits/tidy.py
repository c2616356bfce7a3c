"""Slips of small models that a program is spared without another call.

A 0.5B model often answers with the right idea in the wrong shape: example usage left
after the function (it runs at import and fails), the function under another name, or
the function's body without its def line ("'return' outside function"). Each costs a
call to repeat. Here each is undone in a Python EVOLVE-BLOCK at module level, and only
where the result parses; every fix is named in the edit's notes. Nothing outside the
blocks is touched, and apply.py's final check still runs on the result.
"""

from __future__ import annotations

import ast
import re

from evolve.edits.blocks import find_blocks, replace_block, split_lines
from evolve.edits.bounds import parse_python

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_DEFS, ast.ClassDef)  # what a block defines
_HEADS = (ast.Import, ast.ImportFrom, *_SCOPES)  # never dropped


def tidy(parent: str, child: str) -> tuple[str, list[str]]:
    """child with its blocks' slips undone, and what was done."""
    try:
        pblocks, cblocks = find_blocks(parent), find_blocks(child)
    except ValueError:
        return child, []
    if not pblocks or len(pblocks) != len(cblocks):
        return child, []
    notes: list[str] = []
    for i, (pb, cb) in enumerate(zip(pblocks, cblocks, strict=True)):
        body = _tidy_block(pb.body, cb.body, notes)
        if body != cb.body:
            child = replace_block(child, i, body)
    return child, notes


def _parse(text: str) -> ast.Module | None:
    return parse_python(text)  # bounded: a deep or hostile body is left as it is


def _module_level(text: str) -> bool:
    lines = [ln for ln in split_lines(text) if ln.strip() and not ln.lstrip().startswith("#")]
    return bool(lines) and not lines[0][0].isspace()


def _tidy_block(parent: str, body: str, notes: list[str]) -> str:
    ptree = _parse(parent)
    if ptree is None or not _module_level(parent) or not _module_level(body):
        return body
    pdefs = {n.name: n for n in ptree.body if isinstance(n, _DEFS)}
    tree = _parse(body)
    if tree is None:
        return body
    if len(pdefs) == 1 and _bare_return(tree):
        body, tree = _wrap(parent, next(iter(pdefs.values())), body, tree, notes)
    body, tree = _rename(pdefs, body, tree, notes)
    return _drop_usage(body, tree, notes)


def _bare_return(tree: ast.Module) -> bool:
    """A `return` outside any def (it parses; only compiling refuses it), and no def."""
    if any(isinstance(n, _SCOPES) for n in tree.body):
        return False
    return any(isinstance(n, ast.Return) for s in tree.body for n in ast.walk(s))


def _wrap(
    parent: str,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    body: str,
    tree: ast.Module,
    notes: list[str],
):
    """Statements with a `return` but no def: the parent's def line around them."""
    lines = split_lines(body)
    imports = [ln for ln in lines if re.match(r"(import|from)\s+\w", ln)]
    rest = [ln for ln in lines if ln not in imports]
    first = fn.body[0]
    start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
    # the def line(s), then its docstring if it has one
    head = split_lines(parent)[start : first.lineno - 1]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        head = split_lines(parent)[start : (first.end_lineno or first.lineno)]
    indented = ["    " + ln if ln.strip() else ln for ln in rest]
    new = "".join(imports + head + indented)
    wrapped = _parse(new)
    if wrapped is None:
        return body, tree
    notes.append(f"put the reply's statements under the parent's `def {fn.name}` line")
    return new, wrapped


def _rename(pdefs: dict, body: str, tree: ast.Module, notes: list[str]):
    """The parent's only function missing and one new function of the same arity: renamed
    (where the parent has helpers, which one the evaluator calls is not known here)."""
    defs = {n.name: n for n in tree.body if isinstance(n, _DEFS)}
    missing = [n for n in pdefs if n not in defs]
    extra = [n for n in defs if n not in pdefs]
    if len(pdefs) != 1 or len(missing) != 1 or len(extra) != 1:
        return body, tree
    old, new = extra[0], missing[0]
    if len(defs[old].args.args) != len(pdefs[new].args.args):
        return body, tree
    renamed = re.sub(rf"\b{re.escape(old)}\b", new, body)
    rtree = _parse(renamed)
    if rtree is None:
        return body, tree
    notes.append(f"renamed the reply's function {old} to {new}, the name the program calls")
    return renamed, rtree


def _drop_usage(body: str, tree: ast.Module, notes: list[str]) -> str:
    """Statements after the last def that call print or the block's own functions and set
    nothing a function reads: usage examples. Any other module-level code stays."""
    heads = [k for k, n in enumerate(tree.body) if isinstance(n, _SCOPES)]
    if not heads:
        return body
    own = {"print"} | {n.name for n in tree.body if isinstance(n, _SCOPES)}
    tail = {id(s) for s in tree.body[heads[-1] + 1 :]}
    drop = [s for s in unread(tree) if id(s) in tail and _calls(s) & own]
    if not drop:
        return body
    lines = split_lines(body)
    gone = {k for s in drop for k in range(s.lineno - 1, s.end_lineno or s.lineno)}
    kept = "".join(ln for k, ln in enumerate(lines) if k not in gone)
    if _parse(kept) is None:
        return body
    notes.append(f"dropped {len(drop)} statement(s) after the last function (example usage)")
    return kept


def unread(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements (no def, class or import) that bind no name a def or class
    reads: a small model's example usage, typically, whose numbers no function sees."""
    read = set().union(*(_globals_read(d) for d in tree.body if isinstance(d, _SCOPES)))
    return [s for s in tree.body if not isinstance(s, _HEADS) and not _assigned(s) & read]


def _calls(stmt: ast.stmt) -> set[str]:
    return {
        n.func.id
        for n in ast.walk(stmt)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }


def _globals_read(node: ast.AST) -> set[str]:
    """Names a def or class reads that are not its own arguments or locals."""
    own = {a.arg for n in ast.walk(node) if isinstance(n, ast.arguments) for a in _args(n)}
    own |= _assigned(node)
    return {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own
    }


def _args(a: ast.arguments) -> list[ast.arg]:
    extra = [x for x in (a.vararg, a.kwarg) if x is not None]
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *extra]


def _assigned(stmt: ast.AST) -> set[str]:
    return {
        n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
