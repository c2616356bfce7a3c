"""Hostile results: whatever a candidate (or an evaluator fed by it) returns or writes in
its result file, reading it is never the sandbox's fault, and the host keeps a bounded part.

Property tests feed generated payloads through the host's parsing (the result file, the
Docker agent's copy of it, to_result) and through the harness's conversion of what
evaluate() and score() returned; end-to-end tests run real candidates returning 10**400
on the local sandbox and, where its image is built, on Docker.
"""

from __future__ import annotations

import base64
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators.bounds import DROPPED, MAX_ARTIFACTS, MAX_METRICS, MAX_NAME_CHARS
from evaluators.docker.sandbox import _parse_result
from evaluators.harness_result import ProcRun, read_result_file, to_result
from evaluators.inside import harness
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status

FIXTURES = Path(__file__).parent / "fixtures"
DIRECT = FIXTURES / "sandbox_native" / "direct"  # score and metric `value` = solve()
LIMITS = Limits(timeout_s=20.0, memory_mb=512, max_procs=24, max_file_mb=64, max_output_kb=8)
BIG = 10**400  # past a float's range: float(BIG) raises OverflowError
LOADED = {"loaded": True}  # the harness's report that the evaluator loaded (run mode)
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- generated payloads -------------------------------------------------------------

_text = st.text(st.characters(codec=None), max_size=30) | st.sampled_from(
    ["\x1b]52;c;ZWNobyBoaQ==\x07", "\ud800", "=cmd|' /C calc'!A0", "x" * (MAX_NAME_CHARS + 1)]
)
_number = (
    st.integers(-(10**1000), 10**1000)
    | st.sampled_from([BIG, -BIG, 2**1024, 10**308, -(10**4000)])
    | st.floats(allow_nan=True, allow_infinity=True)
)
_scalar = st.none() | st.booleans() | _number | _text
_json = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20,
)
_statuses = st.sampled_from(
    [Status.OK, Status.INVALID, Status.RUNTIME_ERROR, "timeout", "syntax_error", "nope"]
)


def _deep(n: int) -> object:
    v: object = 1
    for _ in range(n):
        v = [v]
    return v


@st.composite
def _payloads(draw, status: st.SearchStrategy = _statuses) -> dict:
    """A result dict whose every field may be of the wrong type or value."""
    out: dict = {"status": draw(status | _json)}
    for key in ("score", "metrics", "artifacts", "stages", "outputs", "strays"):
        if draw(st.booleans()):
            out[key] = draw(
                _json
                | st.dictionaries(_text, _json, max_size=8)
                | st.sampled_from([_deep(900), {"a": _deep(900)}])
            )
    return out


def _dumps(payload: dict) -> bytes:
    """The payload as JSON text; an int too long for json.dumps written out by hand."""
    try:
        return json.dumps(payload, allow_nan=True).encode("utf-8", "surrogatepass")
    except ValueError:  # past 4300 digits: the host's parser refuses it too
        return b'{"status": "ok", "score": ' + b"9" * 5000 + b"}"


_raw_files = st.one_of(
    _payloads().map(_dumps),
    st.binary(max_size=200),  # not UTF-8, not JSON
    st.sampled_from(
        [
            b"[" * 100_000 + b"]" * 100_000,  # nesting past the parser's recursion limit
            b'{"status": "ok", "score": 1e400, "metrics": {"a": -1e400, "b": NaN}}',
            b'{"status": "ok", "metrics": {"a": 1' + b"0" * 400 + b'}, "score": 1}',
            b'{"status": "ok", "score": "\xff\xfe"}',
            b'\xef\xbb\xbf{"status": "ok", "score": 1}',
        ]
    ),
)


def _check(res: EvalResult) -> None:
    """What the host may store: never our fault, numbers as floats, every dict bounded."""
    assert res.status != Status.SANDBOX_ERROR, res.artifacts
    assert res.score is None or (type(res.score) is float and math.isfinite(res.score))
    assert len(res.metrics) <= MAX_METRICS and len(res.scores) <= MAX_METRICS
    assert all(type(v) is float for v in [*res.metrics.values(), *res.scores.values()])
    assert all(len(k) <= MAX_NAME_CHARS for k in [*res.metrics, *res.scores])
    assert all(type(v) is str for v in res.artifacts.values())
    assert len(res.artifacts) <= MAX_ARTIFACTS + 6  # + the host's own (error, output, ...)
    json.dumps([res.metrics, res.artifacts, res.scores])  # as the archive stores them


def _run(data: dict | None, preamble: dict | None = LOADED) -> ProcRun:
    return ProcRun(data, 0, False, "", "", 0, None, preamble)


def _host(data: dict | None, preamble: dict | None) -> None:
    for check_score in (True, False):
        _check(to_result(_run(data, preamble), LIMITS, "evaluate()", check_score)[0])


# ---- the host's parsing ---------------------------------------------------------------


@PROPERTY
@given(_raw_files)
def test_any_result_file_is_never_a_sandbox_error(raw: bytes) -> None:
    """Run mode: the candidate shares the harness's process and may write any bytes."""
    with tempfile.TemporaryFile() as f:
        f.write(raw)
        f.flush()
        data, _ = read_result_file(f)
    _host(data, LOADED)
    docker, _ = _parse_result(base64.b64encode(raw).decode(), None, 16 * 2**20)
    assert (docker is None) == (data is None)
    _host(docker, LOADED)


@PROPERTY
@given(
    _payloads(
        status=st.sampled_from(
            [Status.OK, Status.INVALID, Status.RUNTIME_ERROR, Status.SANDBOX_ERROR]
        )
    )
)
def test_any_parsed_result_is_never_a_sandbox_error(payload: dict) -> None:
    """Every type in every field, after the candidate ran (it may claim a sandbox error)."""
    _host(payload, LOADED)


@PROPERTY
@given(_payloads(status=st.sampled_from([Status.OK, Status.INVALID, Status.RUNTIME_ERROR])))
def test_a_score_result_is_never_a_sandbox_error(payload: dict) -> None:
    """Score mode (no preamble): score() ran on the candidate's outputs."""
    _host(payload, None)


def test_a_huge_int_metric_is_kept_as_text_and_a_huge_score_is_invalid() -> None:
    res, _ = to_result(_run({"status": Status.OK, "score": BIG, "metrics": {"a": BIG, "b": 2.0}}),
                       LIMITS, "evaluate()", True)  # fmt: skip
    assert res.status == Status.INVALID and res.metrics == {"b": 2.0}
    assert "an integer of about 401 digits, past a float's range" in res.artifacts["error"]
    assert res.artifacts["a"] == str(BIG)
    ok, _ = to_result(
        _run({"status": Status.OK, "score": 1, "metrics": {"a": BIG}}), LIMITS, "x", True
    )
    assert (ok.status, ok.score) == (Status.OK, 1.0)


def test_a_million_metric_names_are_cut_to_the_bound() -> None:
    metrics = {f"{i:x}": 0 for i in range(10**6)}  # short, so the file stays under 16 MB
    names = {"x" * (MAX_NAME_CHARS + 1): 1.0, "y" * MAX_NAME_CHARS: 2.0}
    arts = {f"a{i}": "v" for i in range(1000)}
    stages = {f"s{i}": 0.5 for i in range(1000)}
    payload = {"status": Status.OK, "score": 1.0, "metrics": {**names, **metrics}, "artifacts": arts,
               "stages": stages}  # fmt: skip
    raw = json.dumps(payload, separators=(",", ":")).encode()
    with tempfile.TemporaryFile() as f:  # a result file the host reads (under its size cap)
        f.write(raw)
        data, note = read_result_file(f)
    assert data is not None, note
    res, _ = to_result(_run(data), LIMITS, "evaluate()", True)
    _check(res)
    assert (res.status, res.score, len(res.metrics)) == (Status.OK, 1.0, MAX_METRICS)
    assert list(res.metrics)[:2] == ["y" * MAX_NAME_CHARS, "0"]  # the long name is left out
    assert len(res.scores) == MAX_METRICS
    note = res.artifacts[DROPPED]
    assert f"{10**6 + 2 - MAX_METRICS:,} metrics (at most {MAX_METRICS} are kept)" in note
    assert f"{1000 - MAX_ARTIFACTS:,} artifacts" in note and "stages" in note


# ---- the harness's conversion of what evaluate() and score() returned -----------------


class _Hostile:
    """A value of the candidate's own type: every conversion raises."""

    def __float__(self) -> float:
        raise RuntimeError("no float for you")

    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __bool__(self) -> bool:
        raise RuntimeError("no bool for you")


_returned = st.recursive(
    _scalar
    | st.just(_Hostile())
    | st.builds(pow, st.just(10), st.integers(4400, 5000))
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)


@st.composite
def _returns(draw) -> object:
    if draw(st.booleans()):
        return draw(_returned)
    keys = ("score", "metrics", "artifacts", "outputs", "valid")
    return {k: draw(_returned) for k in keys if draw(st.booleans())}


@PROPERTY
@given(_returns())
def test_whatever_evaluate_returns_is_never_a_sandbox_error(raw: object) -> None:
    """The harness converts, writes and the host reads, as in a real evaluation."""
    for who, preamble in (("evaluate()", LOADED), ("score()", None)):
        result = harness._native(raw, who)
        with tempfile.TemporaryFile() as f:
            harness._write(f"fd:{f.fileno()}", result)
            data, note = read_result_file(f)
        assert data is not None, note
        assert data["status"] != Status.SANDBOX_ERROR, data
        _check(to_result(_run(data, preamble), LIMITS, who, check_score=True)[0])


def test_a_huge_score_from_evaluate_says_why() -> None:
    result = harness._native({"score": BIG, "metrics": {"a": BIG}}, "evaluate()")
    assert result["metrics"] == {} and result["artifacts"]["a"] == str(BIG)
    res, _ = to_result(_run(result), LIMITS, "evaluate()", True)
    assert res.status == Status.INVALID and "past a float's range" in res.artifacts["error"]


# ---- real candidates, end to end ------------------------------------------------------

WRITES_ITS_OWN_RESULT = f"""
import os, sys

def solve():
    text = '{{"status": "ok", "score": 1{"0" * 400}, "metrics": {{"big": 1{"0" * 400}}}}}'
    dst = sys.argv[3]
    if dst.startswith("fd:"):
        fd = int(dst[3:])
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, 0)
        os.write(fd, text.encode())
    else:
        with open(dst, "w") as f:
            f.write(text)
    os._exit(0)
"""
SCORED_EVALUATOR = """
import importlib.util

def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"outputs": {"value": m.solve()}}

def score(outputs, split):
    return {"score": outputs["value"], "metrics": {"value": outputs["value"]}}
"""
ECHOING_EVALUATOR = """
import importlib.util

def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"combined_score": 1.0, **{f"echo_{i}": float(i) for i in range(m.N)}}
"""


def _docker():
    """A Docker sandbox when an engine answers and the image is already built (never built
    here: that is the lead's and the CI's job)."""
    try:
        import docker

        from evaluators.docker.image import find_image
        from evaluators.docker.sandbox import DockerSandbox

        client = docker.from_env(timeout=10)
        image = find_image(client)
    except Exception as e:
        pytest.skip(f"no Docker engine here: {e}")
    if image is None:
        pytest.skip("the sandbox image is not built")
    return DockerSandbox(max_parallel=2, run_id=f"test-payloads-{os.getpid()}", image=image)


@pytest.fixture(scope="module", params=["local", "docker"])
def sandbox(request, tmp_path_factory) -> Iterator:
    sb = (
        LocalSandbox(max_parallel=2, tmp_root=str(tmp_path_factory.mktemp("payloads")))
        if request.param == "local"
        else _docker()
    )
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("payload_problems")
    for name, text in (("scored", SCORED_EVALUATOR), ("echo", ECHOING_EVALUATOR)):
        (root / name).mkdir()
        (root / name / "evaluator.py").write_text(text)
    return {"scored": root / "scored", "echo": root / "echo"}


def _evaluate(sandbox, code: str, problem: Path, fmt: str = "native") -> EvalResult:
    req = EvalRequest(problem_dir=str(problem), program_code=code, program_name="cand.py",
                      split="train", fmt=fmt, limits=LIMITS)  # fmt: skip
    res = sandbox.evaluate(req)
    _check(res)
    return res


def test_a_candidate_returning_10_400_as_metric_and_score(sandbox) -> None:
    res = _evaluate(sandbox, "def solve():\n    return 10**400\n", DIRECT)
    assert res.status == Status.INVALID, res.artifacts
    assert "gave a score that is not a finite number" in res.artifacts["error"]
    assert "past a float's range" in res.artifacts["error"]
    assert res.artifacts["value"] == str(BIG)  # the metric, kept as text


def test_a_trusted_score_of_10_400_is_the_candidates(sandbox, problems) -> None:
    res = _evaluate(sandbox, "def solve():\n    return 10**400\n", problems["scored"])
    assert res.status == Status.INVALID, res.artifacts
    assert "score() gave a score that is not a finite number" in res.artifacts["error"]


def test_a_candidate_writing_10_400_into_its_result_file(sandbox) -> None:
    res = _evaluate(sandbox, WRITES_ITS_OWN_RESULT, DIRECT)
    assert res.status == Status.INVALID, res.artifacts
    assert "past a float's range" in res.artifacts["error"]
    assert res.artifacts["big"] == str(BIG)


def test_an_openevolve_evaluator_echoing_thousands_of_metrics(sandbox, problems) -> None:
    res = _evaluate(sandbox, "N = 5000\n", problems["echo"], fmt="openevolve")
    assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts
    assert len(res.metrics) == MAX_METRICS and "combined_score" in res.metrics
    assert f"{5001 - MAX_METRICS:,} metrics" in res.artifacts[DROPPED]
