"""Programs of several files through the real sandboxes (local with bubblewrap, the local
fallback without namespaces, Docker where its engine answers): the tree laid out at its paths in the scratch folder, its modules
importable in the candidate's worker (a package entry's relative imports too), and a
hostile tree (an escaping path, a reserved name, too many files, a planted link) ending
as one clear line with nothing written outside the scratch folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from evaluators import tree
from evaluators.inside.layout import LayoutError, write_tree
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, Limits, Status
from tests.support.docker_support import docker_image, wait_gone  # noqa: F401  (a session fixture)

FIXTURES = Path(__file__).parent / "fixtures"
TREE = FIXTURES / "tree_native"  # kit problem: double(v) from pkg/__init__.py, a trusted score()
DIRECT = FIXTURES / "sandbox_native" / "direct"  # imports the candidate in-process
OPENEVOLVE = FIXTURES / "sandbox_openevolve" / "basic"
LIMITS = Limits(timeout_s=20.0, memory_mb=1024, max_procs=24, max_file_mb=8, max_output_kb=8)
ENTRY = "pkg/__init__.py"


def seed_files() -> dict[str, str]:
    seed = TREE / "seed"
    return {p.relative_to(seed).as_posix(): p.read_text() for p in sorted(seed.rglob("*.py"))}


def request(code: str, problem: Path = TREE, entry: str = ENTRY, **kw) -> EvalRequest:
    return EvalRequest(
        problem_dir=str(problem),
        program_code=code,
        program_name=entry,
        split="train",
        limits=LIMITS,
        **kw,
    )


eval_request = request  # for the tests that take pytest's `request` fixture


@pytest.fixture(scope="module", params=["bubblewrap", "fallback", "docker"])
def sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "docker":
        from evaluators.docker.sandbox import DockerSandbox

        image = request.getfixturevalue("docker_image")
        sb = DockerSandbox(max_parallel=2, run_id=f"test-tree-{os.getpid()}", image=image)
        yield sb
        sb.close()
        assert wait_gone(sb.client, sb.run_id, 60) == []
        return
    isolate = request.param == "bubblewrap"
    sb = LocalSandbox(
        max_parallel=2, tmp_root=str(tmp_path_factory.mktemp("tree_tmp")), isolate=isolate
    )
    if isolate and sb.isolation.bwrap is None:
        sb.close()
        pytest.skip("no bubblewrap here")
    yield sb
    sb.close()


def test_seed_tree_scores(sandbox: LocalSandbox) -> None:
    """The fixture's seed: `from . import ops` and `from pkg.ops import times` in the entry."""
    res = sandbox.evaluate(request(tree.encode(seed_files())))
    assert (res.status, res.score) == (Status.OK, 12.0), res.artifacts


def test_data_seed_reaches_a_tree(sandbox: LocalSandbox) -> None:
    """The run's private seed reaches the harness beside a tree as beside one file (Docker
    passes it as a descriptor: no DATA_SEED lies beside a tree's entry)."""
    code = tree.encode(seed_files())
    public = sandbox.evaluate(request(code))
    private = sandbox.evaluate(request(code, data_seed=123456789))
    assert public.status == private.status == Status.OK, (public.artifacts, private.artifacts)
    assert (public.artifacts["private_data"], public.artifacts["seed"]) == ("False", "7")
    assert private.artifacts["private_data"] == "True" and private.artifacts["seed"] != "7"


def test_imports_across_the_tree(sandbox: LocalSandbox) -> None:
    """Deeper packages, a folder without __init__.py (namespace package), a data file of the
    tree read beside the module, and __file__ where the tree lies."""
    files = {
        ENTRY: (
            "import os\nfrom .inner import deep\nfrom shapes.square import SIDE\n"
            "from . import ops\n"
            "def double(v):\n"
            "    here = os.path.dirname(__file__)\n"
            "    with open(os.path.join(here, 'table.txt')) as f:\n"
            "        k = int(f.read())\n"
            "    assert here.endswith('/pkg') and deep.__name__ == 'pkg.inner.deep'\n"
            "    return ops.times(v, k) + deep.ZERO + SIDE - 3\n"
        ),
        "pkg/ops.py": "def times(x, k):\n    return x * k\n",
        "pkg/inner/__init__.py": "",
        "pkg/inner/deep.py": "from ..ops import times\nZERO = times(0, 5)\n",
        "pkg/table.txt": "2\n",
        "shapes/square.py": "SIDE = 3\n",
    }
    res = sandbox.evaluate(request(tree.encode(files)))
    assert (res.status, res.score) == (Status.OK, 12.0), res.artifacts


def test_in_process_evaluator_imports_the_tree(sandbox: LocalSandbox) -> None:
    """An evaluator that imports the candidate itself finds the tree's modules too."""
    files = {
        "main.py": "from helpers.values import HALF\ndef solve():\n    return HALF\n",
        "helpers/values.py": "HALF = 0.5\n",
    }
    res = sandbox.evaluate(request(tree.encode(files), DIRECT, entry="main.py"))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts


@pytest.mark.parametrize("stage,score", [(None, 0.75), ("evaluate_stage3", 1.5)])
def test_openevolve_evaluator_imports_the_tree(
    sandbox: LocalSandbox, stage: str | None, score: float
) -> None:
    """An OpenEvolve evaluator imports the candidate in its process, or runs it in a
    subprocess of its own (stage 3): the tree's modules are found either way."""
    files = {
        "main.py": "from lib.values import V\ndef run():\n    return V\n",
        "lib/values.py": "V = 0.75\n",
    }
    res = sandbox.evaluate(
        request(tree.encode(files), OPENEVOLVE, entry="main.py", fmt="openevolve", stage=stage)
    )
    assert (res.status, res.score) == (Status.OK, score), res.artifacts


def test_worker_reads_its_files_and_nothing_new(sandbox: LocalSandbox) -> None:
    """The candidate's worker reads the tree's files by name; the folder they lie in (the
    scratch, where the evaluator may write) stays closed to it, as for one file."""
    probe = (
        "import os\n"
        "ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
        "def double(v):\n"
        "    with open(os.path.join(ROOT, 'pkg', 'ops.py')) as f:\n"
        "        assert 'TWO' in f.read()\n"
        "    for look in (lambda: os.listdir(ROOT), lambda: os.listdir(os.path.join(ROOT, 'pkg'))):\n"
        "        try:\n"
        "            look()\n"
        "        except PermissionError:\n"
        "            continue\n"
        "        return -1\n"
        "    return 2 * v\n"
    )
    res = sandbox.evaluate(request(tree.encode({**seed_files(), ENTRY: probe})))
    if "isolation" in res.artifacts:
        pytest.skip(f"the worker is not confined here: {res.artifacts['isolation']}")
    assert (res.status, res.score) == (Status.OK, 12.0), res.artifacts


def test_syntax_error_in_another_file(sandbox: LocalSandbox) -> None:
    files = {**seed_files(), "pkg/ops.py": "def times(x, k)\n    return x * k\n"}
    res = sandbox.evaluate(request(tree.encode(files)))
    assert res.status == Status.SYNTAX_ERROR
    assert "pkg/ops.py" in res.artifacts["error"], res.artifacts


def test_one_file_program_unchanged(sandbox: LocalSandbox) -> None:
    res = sandbox.evaluate(request("def solve():\n    return 0.25\n", DIRECT, entry="cand.py"))
    assert (res.status, res.score) == (Status.OK, 0.25), res.artifacts


def _raw(files: dict[str, str]) -> str:
    """A tree written by hand, as a hostile reply could make it (tree.encode refuses these)."""
    return "".join(f"{tree.HEADER}{path}\n{text}" for path, text in files.items())


OUTSIDE = "evolve-tree-escape-probe"


@pytest.mark.parametrize(
    "path,why",
    [
        (f"../{OUTSIDE}", "'..'"),
        (f"pkg/../../{OUTSIDE}", "'..'"),
        (f"/tmp/{OUTSIDE}", "must be relative"),
        ("REQ.json", "reserved"),
        ("DATA_SEED", "reserved"),
        ("pkg//x.py", "empty parts"),
    ],
)
def test_hostile_paths_are_invalid(sandbox: LocalSandbox, path: str, why: str) -> None:
    code = _raw({**seed_files(), path: "PWNED = 1\n"})
    res = sandbox.evaluate(request(code))
    assert res.status == Status.INVALID and why in res.artifacts["error"], res.artifacts
    assert (
        res.artifacts["error"].startswith("program tree: ") and "\n" not in res.artifacts["error"]
    )
    assert not any(Path(d, OUTSIDE).exists() for d in ("/tmp", "/", tempfile.gettempdir()))


def test_too_many_files_missing_entry_repeats_and_bad_text(sandbox: LocalSandbox) -> None:
    many = {f"m{i}.py": "" for i in range(tree.MAX_FILES + 1)}
    res = sandbox.evaluate(request(_raw({ENTRY: "def double(v):\n    return 2 * v\n", **many})))
    assert res.status == Status.INVALID and "at most 64 files" in res.artifacts["error"]
    res = sandbox.evaluate(request(_raw({"pkg/ops.py": "X = 1\n", "other.py": ""})))
    assert res.status == Status.INVALID and "entry" in res.artifacts["error"], res.artifacts
    twice = _raw({ENTRY: "", "pkg/ops.py": ""}) + _raw({"pkg/ops.py": ""})
    res = sandbox.evaluate(request(twice))
    assert res.status == Status.INVALID and "twice" in res.artifacts["error"], res.artifacts
    lone = _raw({ENTRY: "def double(v):\n    return 2 * v\n", "pkg/ops.py": "X = '\ud800'\n"})
    res = sandbox.evaluate(request(lone))
    assert res.status == Status.INVALID and "pkg/ops.py: not UTF-8" in res.artifacts["error"]


def test_planted_link_is_not_followed(sandbox: LocalSandbox, tmp_path: Path) -> None:
    """A candidate plants links in its scratch folder at run time, pointing outside it; the
    worker (Landlocked) cannot, the in-process evaluator's candidate tries: nothing lands
    outside, and the next evaluation lays its tree out in a clean folder."""
    target = tmp_path / "target"
    target.mkdir()
    target.chmod(0o777)
    plant = (
        "import os\n"
        "def solve():\n"
        f"    for name, to in (('pkg', {str(target)!r}), ('x.py', {str(target / 'x.py')!r})):\n"
        "        try:\n"
        "            os.symlink(to, name)\n"
        "        except OSError:\n"
        "            pass\n"
        "    return 0.5\n"
    )
    files = {"main.py": plant, "helpers/a.py": ""}
    res = sandbox.evaluate(request(tree.encode(files), DIRECT, entry="main.py"))
    assert res.status == Status.OK, res.artifacts
    res = sandbox.evaluate(request(tree.encode(seed_files())))
    assert (res.status, res.score) == (Status.OK, 12.0), res.artifacts
    assert list(target.iterdir()) == []


# ---- the writer itself, on a folder with links planted in it --------------------------


def test_writer_never_follows_a_link(tmp_path: Path) -> None:
    scratch, outside = tmp_path / "scratch", tmp_path / "outside"
    scratch.mkdir()
    outside.mkdir()
    os.symlink(outside, scratch / "pkg")
    os.symlink(outside / "f.py", scratch / "f.py")
    with pytest.raises(LayoutError, match="pkg/a.py"):
        write_tree(str(scratch), {"pkg/a.py": "x"})
    with pytest.raises(LayoutError, match="f.py"):
        write_tree(str(scratch), {"f.py": "x"})
    for bad in ("../x.py", "/abs.py", "a/./b.py", ""):
        with pytest.raises(LayoutError):
            write_tree(str(scratch), {bad: "x"})
    assert list(outside.iterdir()) == []
    write_tree(str(scratch), {"ok/deep/er.py": "y", "top.py": "z"})
    assert (scratch / "ok/deep/er.py").read_text() == "y" and (
        scratch / "top.py"
    ).read_text() == "z"


# ---- kit.main: `python evaluator.py FOLDER`, the trusted way to score one's own tree -----


def test_kit_main_takes_a_folder(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    given = tmp_path / "mine"
    (given / "pkg").mkdir(parents=True)  # only the file it changes: the rest is the seed's
    (given / "pkg" / "ops.py").write_text("TWO = 3\ndef times(x, k):\n    return x * k\n")
    runs = {}
    for name, program in (("seed", TREE / "seed"), ("mine", given)):
        r = subprocess.run(
            [sys.executable, "evaluator.py", str(program), "train"],
            cwd=TREE,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        runs[name] = json.loads(r.stdout.splitlines()[-1])
    assert runs["seed"]["score"] == 12.0
    assert runs["mine"]["valid"] is False and "wrong doubles: [3, 6, 9]" in runs["mine"]["error"]
