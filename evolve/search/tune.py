"""Constant tuning: the numbers of a program the model wrote, scaled one at a time.

A small model often writes the right shape with the wrong numbers: a penalty for small
gaps below a threshold of 10 where 20 wins, a bonus of 5 where 20 wins. Its children then
score below their parent and the idea is lost, or it takes many more calls to stumble on
the numbers. Tuning spends evaluations instead of calls: each numeric literal of an
evolvable block, halved and doubled, is a child evaluated without asking the model, and a
child that beats its base is tuned in turn (a pattern search, best first: the variants of
the best-scoring base are evaluated first).

Like the repair queue it is derived state: `Controller.rebuild` replays the archive
through `Tuner.finished`, so a resumed run continues the same tuning.
"""

from __future__ import annotations

import ast
import heapq
import math
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from itertools import zip_longest

from evaluators.tree import TreeError, decode, encode, is_tree
from evolve.archive import ProgramRow, ProgramStatus
from evolve.archive.vocab import ProgramKind
from evolve.edits.blocks import find_blocks, split_lines
from evolve.edits.bounds import parse_python
from evolve.edits.tidy import unread

KIND = ProgramKind.TUNE  # programs.kind of a tuned child
FACTORS = (2.0, 0.5)
MAX_LITERALS = 8  # the first ones in the blocks; a long program's tail is left alone
# A root whose first tuned children all scored exactly as their base has numbers that decide
# nothing (a constant priority: every bin ties); its other variants would too.
INERT_STOP = 4
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Literals that are not quantities: an index, a slice, an axis, a dtype's width.
_STRUCTURAL_KEYWORDS = {"axis", "axes", "ndmin", "decimals", "dtype", "k", "n", "ord"}


@dataclass(frozen=True)
class Literal:
    line: int  # 0-based
    col: int  # in characters of that line
    end_col: int
    value: int | float


def literals(code: str) -> list[Literal]:
    """The numeric literals inside the program's EVOLVE-BLOCKs (the whole file without
    markers) that look like quantities and can change what it computes; [] if the program
    does not parse."""
    tree = parse_python(code)  # bounded: a deep or hostile program is [] (bounds.py)
    try:
        blocks = find_blocks(code)
    except ValueError:
        return []
    if tree is None:
        return []
    inside = [(b.start_line + 1, b.end_line) for b in blocks] or [(0, len(split_lines(code)))]
    # Example usage a small model left after its function (`bins = np.array([24, 16])`):
    # scaling its numbers changes nothing and would spend the tuning on them.
    skip = {id(n) for s in unread(tree) for n in ast.walk(s)}
    # Helpers a function defines and never uses (`def small_gap_penalty(gap): ...`): a run
    # spent its first four tuned children on such numbers, and nearly stopped the root there.
    for d in _unused_helpers(tree):
        if id(d) not in skip:  # an unused helper inside another is skipped with it
            skip.update(id(n) for n in ast.walk(d))
    # `skip` holds whole subtrees: a node in it has its subtree there too (once each, so
    # nesting such as a[b[c[...]]] costs its size, not its size times its depth)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Subscript):
            skip.update(id(n) for n in ast.walk(node.slice))
        elif isinstance(node, ast.keyword) and node.arg in _STRUCTURAL_KEYWORDS:
            skip.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, ast.Call) and _name(node.func) in {"range", "round"}:
            skip.update(id(n) for a in node.args for n in ast.walk(a))
    lines = split_lines(code)
    out: list[Literal] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or type(node.value) not in (int, float):
            continue  # type(), not isinstance: True and False are ints too
        value: int | float = node.value  # type: ignore[assignment]
        if (
            value == 0
            or not math.isfinite(value)
            or id(node) in skip
            or node.end_lineno != node.lineno
            or node.end_col_offset is None
        ):
            continue
        line = node.lineno - 1
        if not any(lo <= line < hi for lo, hi in inside):
            continue
        text = lines[line].encode()
        col = len(text[: node.col_offset].decode())
        end = len(text[: node.end_col_offset].decode())
        out.append(Literal(line, col, end, value))
    out.sort(key=lambda lit: (lit.line, lit.col))
    return out[:MAX_LITERALS]


def _unused_helpers(tree: ast.Module) -> list[ast.AST]:
    """Functions defined inside another whose name nothing in the program reads, outer
    ones first (one pass: walking each function's subtree is quadratic in their nesting)."""
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    found: list[ast.AST] = []
    level: list[tuple[ast.AST, bool]] = [(tree, False)]  # (node, inside a function)
    while level:
        nxt: list[tuple[ast.AST, bool]] = []
        for node, inside in level:
            is_def = isinstance(node, _DEFS)
            if is_def and inside and node.name not in read:  # type: ignore[attr-defined]
                found.append(node)
            nxt.extend((c, inside or is_def) for c in ast.iter_child_nodes(node))
        level = nxt
    return found


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def _scaled(value: int | float, factor: float) -> int | float | None:
    new = value * factor
    if isinstance(value, int):
        new = int(round(new))
    return None if new == value or new == 0 or not math.isfinite(new) else new


def variants(code: str, fixed: Collection[str] = ()) -> list[str]:
    """One program per literal and factor, that literal scaled, all else unchanged (the
    text around it byte for byte): the first literal doubled, then halved, then the next.
    A program of several files: the numbers of every evolving file (never a fixed file's, nor
    a tree header), one file's then the next's in turn, so each file is reached early."""
    if is_tree(code):
        return _tree_variants(code, fixed)
    lines = split_lines(code)
    out: list[str] = []
    for lit in literals(code):
        for f in FACTORS:
            new = _scaled(lit.value, f)
            if new is None:
                continue
            line = lines[lit.line]
            changed = line[: lit.col] + _literal_text(new) + line[lit.end_col :]
            out.append("".join(lines[: lit.line] + [changed] + lines[lit.line + 1 :]))
    return out


def _tree_variants(code: str, fixed: Collection[str]) -> list[str]:
    try:
        files = decode(code, "")
    except TreeError:
        return []
    per_file = [
        [(path, v) for v in variants(text)] for path, text in files.items() if path not in fixed
    ]
    out = []
    for round_ in zip_longest(*per_file):
        for item in round_:
            if item is not None:
                path, text = item
                out.append(encode({**files, path: text}))
    return out


def _literal_text(value: int | float) -> str:
    """Short, and still a float where it was one (2.5, 40.0, 1e-06)."""
    if isinstance(value, int):
        return repr(value)
    text = f"{value:.6g}"
    return text if any(c in text for c in ".en") else text + ".0"


@dataclass(order=True)
class _Pending:
    key: tuple[float, int]  # (-base score, order queued): the best base's variants first
    parent_id: str = field(compare=False)
    root_id: str = field(compare=False)
    code: str = field(compare=False)


@dataclass
class Tuner:
    """Which tuned child to evaluate next. A base is a valid program with numbers that
    behaves unlike every earlier program of the run: a child the model wrote that scores
    unlike its parent (better or worse: a penalty with the wrong numbers scores worse, and
    doubled it wins), or a tuned child that beats its own base. A program that behaves as an
    earlier one is not tuned again: its twin was, or could not be. `budget` tuned children at
    most descend from one model-written program, and none more once the first INERT_STOP of
    them all scored exactly as their base."""

    budget: int
    fixed: tuple[str, ...] = ()  # a tree's files whose numbers are never tuned
    pending: list[_Pending] = field(default_factory=list)  # a heap
    root: dict[str, str] = field(default_factory=dict)  # tuned child -> its model-written root
    spent: dict[str, int] = field(default_factory=dict)  # root -> tuned children so far
    inert: dict[str, int] = field(default_factory=dict)  # root -> those that scored as their base
    moved: set[str] = field(default_factory=set)  # roots with a tuned child that did not
    issued: set[str] = field(default_factory=set)  # codes given out by next(), counted there
    queued: int = 0
    in_flight: int = 0  # given out by next(), not finished yet

    def finished(self, row: ProgramRow, parent_score: float | None, novel: bool) -> None:
        """A program's outcome (`novel`: it behaves unlike every earlier program of the
        run): queue its variants if it is a base."""
        if not self.budget or row.iteration == 0 or row.code is None:
            return
        if row.kind == KIND:
            root = self.root.get(row.parent_id or "", row.parent_id or "")
            self.root[row.program_id] = root
            if row.code not in self.issued:  # replayed from the archive: not counted yet
                self.spent[root] = self.spent.get(root, 0) + 1
            else:
                self.in_flight -= 1
            if row.score is not None and row.score == parent_score:
                self.inert[root] = self.inert.get(root, 0) + 1
            else:
                self.moved.add(root)
            base = (
                row.status == ProgramStatus.OK
                and row.score is not None
                and parent_score is not None
                and row.score > parent_score
            )
        else:  # the model's, if it changed what its parent does (a monotone rewrite does not)
            root = row.program_id
            base = row.status == ProgramStatus.OK and row.score != parent_score
        if base and novel and row.score is not None:
            for c in variants(row.code, self.fixed):
                key = (-row.score, self.queued)
                heapq.heappush(self.pending, _Pending(key, row.program_id, root, c))
                self.queued += 1

    def waiting(self) -> bool:
        """A variant may be given out now (one of an inert root's may not)."""
        return any(
            self.spent.get(p.root_id, 0) < self.budget and not self._inert(p.root_id)
            for p in self.pending
        )

    def next(self, is_seen: Callable[[str], bool]) -> _Pending | None:
        """The next variant to evaluate, None when none waits. `is_seen(code)`: an equal
        program was evaluated already (it is dropped, costing nothing). An inert root's
        variants wait: a tuned child still in flight may yet move it (and a resumed run,
        which replays every stored child, must find them)."""
        held: list[_Pending] = []
        found = None
        while self.pending and found is None:
            p = heapq.heappop(self.pending)
            if self.spent.get(p.root_id, 0) >= self.budget or is_seen(p.code):
                continue
            if self._inert(p.root_id):
                held.append(p)
                continue
            self.spent[p.root_id] = self.spent.get(p.root_id, 0) + 1
            self.issued.add(p.code)
            self.in_flight += 1
            found = p
        for p in held:
            heapq.heappush(self.pending, p)
        return found

    def left(self) -> int:
        """At most how many tuned children are still to come: those being evaluated, and
        what the queued variants give (a root's, up to what is left of its budget); a
        better child queues more of its own."""
        queued = Counter(p.root_id for p in self.pending if not self._inert(p.root_id))
        waiting = sum(max(0, min(n, self.budget - self.spent.get(r, 0))) for r, n in queued.items())
        return self.in_flight + waiting

    def _inert(self, root: str) -> bool:
        return root not in self.moved and self.inert.get(root, 0) >= INERT_STOP
