"""The conformance contract of a problem folder, read from its `conformance.toml`.

Every folder under problems/ is held by tests/test_problem_conformance.py to the same
contract; what differs between problems (their README's numbers, the candidates that
must fail and how, the tampering that must gain nothing, the replies of a scripted run)
is data in `problems/<name>/conformance.toml`, read here. A problem's own test module
(tests/test_problem_<name>.py) may read the same data and the same cached results (one
`evolve eval` per program and split per session) for its problem-specific checks.

`conformance.toml` (every key below is checked; an unknown one is an error):

    seed_baseline = "best_fit.py"   # the baseline whose EVOLVE block is the seed's
    score_is_metric = true          # score = the metric (maximize) or -metric (minimize)

    readme = [                      # the README's numbers: `evolve eval --split S --json`
        # program (in baselines/), split, value specs (below) of the output's fields and
        # metrics; via = "process": evaluate() + score() in this process instead of the CLI
        { program = "best_fit.py", split = "train", score = -3.884180790960452 },
        { program = "best_fit.py", split = "test", metrics = { avg_bins_or3 = 212.0 } },
    ]

    [[bad]]                         # a candidate that must fail, with a clear error
    name = "scalar"
    body = "def priority(item, bins):\\n    return float(item)\\n"   # or another source
    split = "quick"                 # default: the train split
    status = "invalid"              # default; the error artifact holds every `error` fragment
    error = "shape ()"              # a fragment, or a list of them
    in_process = false              # true: the evaluator's evaluate() here, not the CLI
    # also: prelude (as below), error_starts, error_match (a regex), traceback (a fragment
    # of the traceback artifact), metrics (value specs); split = "cascade": no --split

    [[tamper]]                      # patching or printing that must gain nothing
    name = "patch_the_evaluator"
    baseline = "first_fit.py"
    prelude = "import sys\\n..."   # module-level code put first in the block
    fake_print = true               # also print fake scores (then "1e9" is in stdout)
    score = ...                     # value specs of the honest result (and metrics)
    honest = { program = "round_robin.py", metrics = ["balancedness"] }  # = its own run

    [timeout]                       # a candidate that never returns
    body = "def priority(item, bins):\\n    while True:\\n        pass\\n"

    [run]                           # a scripted 20-iteration run
    replies = [{ baseline = "first_fit.py", note = "..." }, { text = "No code." }]
    code = "bins.max()"             # the best program holds this
    beats = "best_fit.py"           # and its train score is above this baseline's
    # or matches = "X.py": its score and metrics meet X's README rows on train and test;
    # or data_seed = N (the run's --data-seed), reference = a body source, compare =
    # "beats" | "matches" | "at_least", key = "score" or a metric, abs = the tolerance:
    # the reference scored here on the run's own workloads

A body source is one of `body` (the text), `baseline` (the block of baselines/X),
`file` (the block of a file of the folder) or `edit` (a canned edit of <problem>_edits.py,
in tests/support/ or evolve/testing/), then `replace = [[old, new], ...]`, `prepend`, `append`.
A program of several files (problem.toml's [program]) has its baselines as folders laid
out like the seed's tree (`seed_baseline` and `program` name a folder); a body source
names the tree file whose block it is with `path = "policy/mapping.py"` (default: the
first evolving file), and a scripted reply names that file on a line above its code.

A value spec is a number (equal exactly), a decimal string ("5.37": equal when printed
with that many decimals, as a README prints it), a comparison ("> 0", "<= 0.2") or
"absent" (the key is not there).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from evolve.problem.load import load_problem
from evolve.problem.program_input import program_digest
from tests.support.problem_hostile import (
    FAKE_PRINT,
    block_body,
    eval_json,
    load_module,
    run_in_process,
    with_block,
)

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ROOT / "problems"
CONTRACT_FILE = "conformance.toml"

_SOURCE = ("body", "baseline", "file", "edit")
_SHAPING = ("replace", "prepend", "append", "path")  # path: the tree file (several files)
_KEYS = {
    "top": {"seed_baseline", "score_is_metric", "readme", "bad", "tamper", "timeout", "run"},
    "readme": {"program", "split", "via", "metrics", "score", "eval_s"},
    "bad": {
        "name",
        "split",
        "status",
        "error",
        "error_starts",
        "error_match",
        "traceback",
        "metrics",
        "in_process",
        "prelude",
        *_SOURCE,
        *_SHAPING,
    },  # fmt: skip
    "tamper": {
        "name",
        "split",
        "prelude",
        "fake_print",
        "score",
        "metrics",
        "honest",
        *_SOURCE,
        *_SHAPING,
    },  # fmt: skip
    "timeout": {"split", *_SOURCE, *_SHAPING},
    "run": {
        "replies",
        "code",
        "beats",
        "matches",
        "data_seed",
        "reference",
        "compare",
        "key",
        "abs",
    },  # fmt: skip
    "reply": {"note", "text", "reference", *_SOURCE, *_SHAPING},  # reference: [run]'s
}
_COMPARISON = re.compile(r"(<=|>=|<|>|==)\s*(-?[\d.eE+-]+)")
_DECIMAL = re.compile(r"-?\d+(\.\d+)?")


class ContractError(AssertionError):
    """The conformance file is missing, malformed, or names what the folder lacks."""


def problem_dirs() -> list[Path]:
    """Every problem folder: each directory under problems/ (a new one is held to the
    contract by existing)."""
    return sorted(p for p in PROBLEMS.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


@dataclass
class Contract:
    problem: Path
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why the file could not be read

    @property
    def name(self) -> str:
        return self.problem.name

    def rows(self, section: str) -> list[dict]:
        return list(self.data.get(section, []))

    def readme(self, program: str, split: str) -> dict:
        for row in self.rows("readme"):
            if (row["program"], row["split"]) == (program, split):
                return row
        raise ContractError(f"{self.name}: no [[readme]] row for {program} on {split}")

    def bad(self, name: str) -> dict:
        return _named(self, "bad", name)

    def tamper(self, name: str) -> dict:
        return _named(self, "tamper", name)


def _named(c: Contract, section: str, name: str) -> dict:
    for row in c.rows(section):
        if row["name"] == name:
            return row
    raise ContractError(f"{c.name}: no [[{section}]] row named {name!r}")


@functools.cache
def contract(problem: Path) -> Contract:
    """The folder's contract; a missing or malformed file gives a Contract with `error`."""
    path = problem / CONTRACT_FILE
    if not path.is_file():
        return Contract(problem, error=f"{path} is missing: every problem folder states its "
                                       f"contract there (see tests/support/problem_contract.py)")  # fmt: skip
    try:
        data = tomllib.loads(path.read_text())
        _validate(data, path)
    except (tomllib.TOMLDecodeError, ContractError) as e:
        return Contract(problem, error=f"{path}: {e}")
    return Contract(problem, data)


def _validate(data: dict, path: Path) -> None:
    def keys(table: dict, kind: str, where: str) -> None:
        unknown = set(table) - _KEYS[kind]
        if unknown:
            raise ContractError(f"{where}: unknown keys {sorted(unknown)}")

    keys(data, "top", "top level")
    for section in ("readme", "bad", "tamper"):
        for i, row in enumerate(data.get(section, [])):
            keys(row, section, f"[[{section}]] {i + 1}")
    for section in ("timeout", "run"):
        if section in data:
            keys(data[section], section, f"[{section}]")
    for i, reply in enumerate(data.get("run", {}).get("replies", [])):
        keys(reply, "reply", f"[run] replies[{i}]")
    for section in ("bad", "tamper"):
        names = [row.get("name") for row in data.get(section, [])]
        if None in names or len(set(names)) != len(names):
            raise ContractError(f"[[{section}]]: every row needs a distinct name, got {names}")


# ---------------------------------------------------------------- bodies


@functools.cache
def edits(problem_name: str) -> dict[str, tuple[str, str]]:
    """<problem>_edits.py's canned edits, name -> (note, source) (its *_VARIANTS): in
    tests/support/, or in evolve/testing/ where a benchmark serves them too."""
    name = f"{problem_name}_edits"
    package = (
        "tests.support" if importlib.util.find_spec(f"tests.support.{name}") else "evolve.testing"
    )
    module = importlib.import_module(f"{package}.{name}")
    (variants,) = [v for k, v in vars(module).items() if k.endswith("_VARIANTS")]
    return {name: (note, src) for name, note, src in variants}


def body_of(c: Contract, spec: dict) -> str:
    """The EVOLVE-block text a body source names (see the module's docstring)."""
    given = [k for k in _SOURCE if k in spec]
    if len(given) != 1:
        raise ContractError(f"{c.name}: a body needs exactly one of {_SOURCE}, got {given}: {spec}")
    kind, value = given[0], spec[given[0]]
    if kind == "body":
        text = value
    elif kind == "baseline":  # of a program of several files: the block of its file `path`
        text = block_body(c.problem / "baselines" / value / spec.get("path", ""))
    elif kind == "file":
        text = block_body(c.problem / value)
    else:
        canned = edits(c.name)
        if value not in canned:
            raise ContractError(f"{c.name}: no canned edit {value!r} in {c.name}_edits.py")
        text = canned[value][1]
    for old, new in spec.get("replace", []):
        if old not in text:
            raise ContractError(f"{c.name}: {old!r} is not in the body of {spec}")
        text = text.replace(old, new, 1)
    return spec.get("prepend", "") + text + spec.get("append", "")


def program_for(c: Contract, row: dict, dest: Path) -> Path:
    """The candidate a [[bad]] or [[tamper]] row describes: the seed with its block
    replaced, the row's prelude (and the fake prints) first in the block."""
    prelude = row.get("prelude", "") + (FAKE_PRINT if row.get("fake_print") else "")
    return with_block(c.problem, body_of(c, row), dest, prelude=prelude, path=row.get("path"))


def split_of(c: Contract, row: dict) -> str | None:
    """The row's split: the train split unless it names one; "cascade" means none given
    (`evolve eval` then runs the whole cascade, as a run does)."""
    split = row.get("split") or load_problem(c.problem).train_split
    return None if split == "cascade" else split


def row_output(c: Contract, section: str, name: str, dest: Path) -> dict:
    """The output of a [[bad]] or [[tamper]] row through `evolve eval` (once a session)."""
    row = _named(c, section, name)
    return evaluated(c.problem, program_for(c, row, dest), split_of(c, row))


# ---------------------------------------------------------------- values


def check_value(got: Any, spec: Any, what: str) -> None:
    """`got` meets the value spec `spec` (see the module's docstring)."""
    if isinstance(spec, bool) or spec is None:
        assert got == spec, f"{what}: {got!r}, expected {spec!r}"
    elif isinstance(spec, int | float):
        assert got == spec, f"{what}: {got!r}, expected exactly {spec!r}"
    elif isinstance(spec, str) and (m := _COMPARISON.fullmatch(spec.strip())):
        op, bound = m.group(1), float(m.group(2))
        ok = {"<": got < bound, "<=": got <= bound, ">": got > bound, ">=": got >= bound,
              "==": got == bound}[op]  # fmt: skip
        assert ok, f"{what}: {got!r}, expected {spec}"
    elif isinstance(spec, str) and _DECIMAL.fullmatch(spec):
        decimals = len(spec.partition(".")[2])
        printed = f"{got:.{decimals}f}"
        if float(printed) == 0:
            printed = printed.lstrip("-")
        assert printed == spec, f"{what}: {got!r} prints as {printed}, expected {spec}"
    else:
        raise ContractError(f"{what}: unreadable value spec {spec!r}")


def check_values(
    out: dict, row: dict, what: str, keys: tuple[str, ...] = ("score", "eval_s")
) -> None:
    """Every value spec of `row`: its `keys` against the output's fields, its `metrics`
    against the output's metrics."""
    for key in keys:
        if key in row:
            _check_key(out, key, row[key], what)
    for key, spec in row.get("metrics", {}).items():
        _check_key(out.get("metrics") or {}, key, spec, f"{what}: metric")


def _check_key(holder: dict, key: str, spec: Any, what: str) -> None:
    if spec == "absent":
        assert key not in holder, f"{what} {key} is there ({holder[key]!r}); expected absent"
        return
    assert key in holder, f"{what} {key} is missing from {sorted(holder)}"
    check_value(holder[key], spec, f"{what} {key}")


def number_of(spec: Any) -> float | None:
    """The number a value spec stands for (exact, or as printed), or None (a comparison)."""
    if isinstance(spec, int | float) and not isinstance(spec, bool):
        return float(spec)
    if isinstance(spec, str) and _DECIMAL.fullmatch(spec):
        return float(spec)
    return None


def as_number(spec: Any) -> float:
    number = number_of(spec)
    if number is None:
        raise ContractError(f"{spec!r} is not a number")
    return number


def printed_in(text: str, value: float) -> bool:
    """The README prints `value`: some number in `text` is `value` (sign aside) rounded to
    that number's decimals."""
    for token in re.findall(r"\d[\d,]*(?:\.\d+)?", text):
        plain = token.replace(",", "")
        decimals = len(plain.partition(".")[2])
        if decimals and f"{abs(value):.{decimals}f}" == plain:
            return True
        if not decimals and float(plain) == abs(value):
            return True
    return False


# ---------------------------------------------------------------- evaluations, once a session


@functools.cache
def evaluator(problem: Path) -> ModuleType:
    """The problem's evaluator.py, imported in this process as the sandbox imports it."""
    if str(problem) not in sys.path:
        sys.path.insert(0, str(problem))
    return load_module(problem / "evaluator.py")


_EVALS: dict[tuple[str, ...], dict] = {}


def evaluated(problem: Path, program: Path, split: str | None, via: str = "cli") -> dict:
    """`evolve eval PROBLEM PROGRAM --split SPLIT --json` (or, `via="process"`, evaluate()
    then the trusted score() here, the candidate in its worker), once per session for the
    same program text: the conformance suite and a problem's own checks share it."""
    key = (str(problem), hashlib.sha256(program_digest(program)).hexdigest(), str(split), via)
    if key not in _EVALS:
        if via == "cli":
            _EVALS[key] = eval_json(problem, program, split)
        elif via == "process":
            assert split is not None, "in this process: name the split"
            _EVALS[key] = run_in_process(problem, evaluator(problem), program, split)
        else:
            raise ContractError(f"{problem.name}: via must be 'cli' or 'process', got {via!r}")
    return _EVALS[key]


def readme_output(problem: Path, program: str, split: str) -> dict:
    """The output behind a [[readme]] row (evaluated once a session)."""
    row = contract(problem).readme(program, split)
    return evaluated(problem, problem / "baselines" / program, split, row.get("via", "cli"))
