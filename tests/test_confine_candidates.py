"""A compiled candidate is confined like the Python worker, on every backend and fallback.

tests/support/confine_attack.py's hostile C++ candidates of a native `tools` problem try to read the
request, the data seed, the run's `--env` secret, the problem folder, the data folder and the
runs folder's archive.db, at run time and at compile time, and print what they got into
their stderr artifact: nothing of it may reach the stored result. Each backend: the local
sandbox (bubblewrap), its fallback without namespaces, Docker, and Ray (a local node:
tests/test_confine_ray.py).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.backends import ISOLATION_ENV, make_sandbox
from evaluators.inside import landlock
from evaluators.local import bubblewrap
from evaluators.sandbox import EvalRequest, Sandbox, Status
from tests.support import confine_attack as attack
from tests.support.docker_support import docker_image  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ here"),
    pytest.mark.skipif(landlock.abi_version() == 0, reason="no Landlock in this kernel"),
]


@pytest.fixture
def places() -> Iterator[tuple[Path, Path, Path]]:
    """The problem, its data and a runs folder, in a folder every uid may walk into (the
    fallback's slot uids must reach the problem: it is the Landlock that must stop them)."""
    root = Path(tempfile.mkdtemp(prefix="evolve-confine-", dir="/var/tmp"))
    root.chmod(0o755)
    try:
        folder, data = attack.problem(root)
        yield folder, data, attack.runs_folder(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _attack(sandbox: Sandbox, folder: Path, data: Path, runs: Path) -> None:
    """Both attacks, then the honest seed: it still compiles, runs and scores."""
    got = sandbox.evaluate(attack.request(folder, data, attack.reader(folder, data, runs)))
    assert got.status == Status.INVALID and attack.ran(got), got.artifacts
    assert attack.secrets_in(got, folder, data, runs) == [], got.artifacts["stderr"]
    got = sandbox.evaluate(attack.request(folder, data, attack.includer(folder, data, runs)))
    assert got.artifacts.get("error") == "compilation failed", got.artifacts
    assert attack.secrets_in(got, folder, data, runs) == [], got.artifacts["stderr"]
    honest = sandbox.evaluate(attack.request(folder, data, (folder / "heuristic.cpp").read_text()))
    assert honest.status == Status.OK and honest.score and honest.score > 0.5, honest.artifacts
    assert "isolation" not in honest.artifacts, honest.artifacts


@pytest.mark.skipif(bubblewrap.probe().bwrap is None, reason="bubblewrap cannot run here")
def test_local_sandbox_keeps_a_compiled_candidate_from_every_secret(places):
    sandbox = make_sandbox("local", 1, isolate=True)
    try:
        _attack(sandbox, *places)
    finally:
        sandbox.close()


def test_the_fallback_without_namespaces_keeps_it_out_too(places, monkeypatch):
    """No mount namespace: the runs folder, the problem and the data are all on the host's
    file system, where only the candidate's Landlock (and, as root, its slot uid) stops it."""
    monkeypatch.setenv(ISOLATION_ENV, "off")
    sandbox = make_sandbox("local", 1)
    try:
        _attack(sandbox, *places)
    finally:
        sandbox.close()


@pytest.mark.timeout(900)  # the first call builds the g++ layer
def test_docker_keeps_it_out_of_in_and_the_mounts(places, docker_image):  # noqa: F811
    folder = places[0]
    sandbox = make_sandbox("docker", 1, problem_dir=str(folder), tools=("g++",))
    try:
        _attack(sandbox, *places)
    finally:
        sandbox.close()


def _evaluate_once(sandbox: Sandbox, folder: Path, code: str, fmt: str, seed: int | None = None):
    """One candidate `code` of the fixture `folder`, with the run's `--env` secret (and data
    seed); the sandbox is closed after."""
    try:
        return sandbox.evaluate(
            EvalRequest(
                problem_dir=str(folder),
                program_code=code,
                program_name="cand.py",
                split="train",
                fmt=fmt,
                limits=attack.LIMITS,
                env={attack.ENV_NAME: attack.ENV_VALUE},
                data_seed=seed,
            )
        )
    finally:
        sandbox.close()


OPENEVOLVE = Path(__file__).parent / "fixtures" / "sandbox_openevolve" / "basic"
LOOKER = """
def run():
    import os
    seen = []
    for path in ("../REQ.json", "/scratch/REQ.json", "../DATA_SEED", "../OUTPUTS.json"):
        try:
            seen.append(path + ": " + open(path).read()[:300])
        except OSError:
            pass
    raise RuntimeError("SEEN " + repr(seen) + " IN " + repr(sorted(os.listdir(".."))))
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["bubblewrap", "fallback"])
def test_an_openevolve_candidate_finds_no_request_in_its_scratch(isolate):
    """It shares its evaluator's process, which may read its scratch: the request was never
    a file there."""
    if isolate and bubblewrap.probe().bwrap is None:
        pytest.skip("bubblewrap cannot run here")
    got = _evaluate_once(
        make_sandbox("local", 1, isolate=isolate), OPENEVOLVE, LOOKER, "openevolve"
    )
    error = got.artifacts.get("error", "")
    assert "SEEN [] IN " in error and "cand.py" in error, got.artifacts
    assert "REQ.json" not in error and "program_code" not in error


DIRECT = Path(__file__).parent / "fixtures" / "sandbox_native" / "direct"  # no kit worker
IN_PROCESS = """
import glob, os
INFO = []
for path in {paths!r} + glob.glob("/proc/*/fd/*"):
    try:
        with open(path, "rb") as f:
            INFO.append(path + ": " + f.read(200).decode("latin-1"))
    except OSError:
        pass
INFO = repr(INFO)


def solve():
    return 0.5
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["bubblewrap", "fallback"])
def test_a_candidate_its_evaluator_runs_in_process_reads_no_archive(isolate, places):
    """An evaluator that imports its Python candidate itself (no kit worker): the harness
    Landlocks itself first, so even without namespaces the runs folder stays closed."""
    if isolate and bubblewrap.probe().bwrap is None:
        pytest.skip("bubblewrap cannot run here")
    runs = places[2]
    runs.chmod(0o755)  # as an older evolve left it: only the Landlock stands in the way
    (runs / "archive.db").chmod(0o644)
    paths = [str(runs / "archive.db"), str(runs / "archive.db-wal"), "/scratch/REQ.json"]
    got = _evaluate_once(
        make_sandbox("local", 1, isolate=isolate),
        DIRECT,
        IN_PROCESS.format(paths=paths),
        "native",
        attack.SEED,
    )
    assert got.status == Status.OK and got.score == 0.5, got.artifacts
    info = got.artifacts["info"]
    assert attack.ARCHIVE_CANARY not in info and str(attack.SEED) not in info, info
    assert "program_code" not in info and "archive.db" not in info, info


IN_FILES = ["/in/REQ.json", "/in/DATA_SEED", "/in/OUTPUTS.json", "/scratch/REQ.json"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("fmt", ["openevolve", "native"])
def test_docker_keeps_trusted_files_from_a_candidate_its_evaluator_imports(fmt, docker_image):  # noqa: F811
    """A Python candidate in its evaluator's own process (an OpenEvolve evaluator, a native
    one without the kit's worker) reads all its harness may: the request, the `--env`
    secret and the data seed never lay under /in, and their descriptors are closed."""
    folder = OPENEVOLVE if fmt == "openevolve" else DIRECT
    code = IN_PROCESS.format(paths=IN_FILES)
    if fmt == "openevolve":
        code += "\n\ndef run():\n    raise RuntimeError('SEEN ' + INFO)\n"
    got = _evaluate_once(
        make_sandbox("docker", 1, problem_dir=str(folder)), folder, code, fmt, attack.SEED
    )
    seen = got.artifacts.get("error" if fmt == "openevolve" else "info", "")
    assert ("SEEN [" in seen) if fmt == "openevolve" else got.status == Status.OK, got.artifacts
    assert str(attack.SEED) not in seen and "program_code" not in seen, seen
    assert attack.ENV_VALUE not in seen and "REQ" not in seen, seen
