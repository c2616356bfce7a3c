"""What evaluators may import: the sandbox image's scientific stack, a problem's own
requirements.txt layered on the image for Docker, and what `evolve check` reports missing
for the local sandbox.

The Docker tests run against the real engine (skipped, saying why, without one); the
layer is built with the host's pip, so they need the package index the host's pip uses.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from evaluators.backends import make_sandbox
from evaluators.docker.image import ImageError
from evaluators.docker.image_layers import find_problem_image, problem_image
from evolve.problem.requirements import missing_requirements
from evolve.testing.cli_helpers import evolve
from tests.support.docker_support import docker_image, engine  # noqa: F401  (docker_image: a fixture)

STACK = "import numpy, scipy, pandas, networkx, sklearn, matplotlib"
PLOT = "import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.savefig('/scratch/p.png')"
WHERE = "import numpy; print(numpy.__file__)"
SMALL = "tabulate==0.9.0"  # pure Python, neither in the image nor in the test environment


def run_in(image: str, code: str) -> str:
    """stdout of `python3 -c code` as the sandbox's user: no network, read-only root, HOME
    a tmpfs (as the Docker sandbox runs it)."""
    out = engine().containers.run(
        image,
        ["python3", "-s", "-c", code],
        user="10001:10001",
        network_mode="none",
        read_only=True,
        environment={"HOME": "/scratch"},
        tmpfs={"/scratch": "uid=10001,mode=0700", "/tmp": "mode=1777"},
        remove=True,
        stderr=True,
    )
    return out.decode()


def test_the_image_carries_the_scientific_stack(docker_image) -> None:  # noqa: F811
    out = run_in(docker_image, f"{STACK}; {PLOT}; print(matplotlib.get_backend())")
    assert out.strip().lower() == "agg", out  # headless, and no warning on stderr


# A module of each framework's own dependencies (issue 41): an example evaluator written
# beside `pip install openevolve` or `pip install shinka-evolve` imports these.
FRAMEWORKS = (
    "import yaml, tqdm, flask, dacite, cloudpickle, openai",  # OpenEvolve 0.4.1's
    "import anthropic, boto3, pydantic, backoff, dotenv, instructor, Levenshtein, radon, unidiff,"
    " dill, hydra, seaborn, moviepy, adjustText, markdown, aiofiles, psutil, httpx",  # Shinka's
    "from google import genai",
)


def test_the_image_carries_what_openevolve_and_shinka_installs_bring(docker_image) -> None:  # noqa: F811
    code = "; ".join(FRAMEWORKS) + "; import typing_extensions as t; print(t.__file__)"
    out = run_in(docker_image, code)
    # pip's newer typing_extensions in place of Debian's (pruned): one copy, pydantic's
    assert out.strip() == "/usr/local/lib/python3.11/dist-packages/typing_extensions.py", out


@pytest.fixture(scope="module")
def layered(docker_image, tmp_path_factory):  # noqa: F811
    """A problem folder whose requirements.txt is new to this engine (a unique comment), the
    layer built on it and (its tag, the log of the build); the layer is removed afterwards."""
    problem = tmp_path_factory.mktemp("problem")
    (problem / "requirements.txt").write_text(f"# {uuid.uuid4()}\n{SMALL}\nnumpy>=1.20\n")
    client = engine()
    assert find_problem_image(client, problem) is None
    lines: list[str] = []
    tag = problem_image(client, problem, log=lines.append)
    yield problem, tag, lines
    client.images.remove(tag, force=True)


def test_a_problem_requirement_is_layered_on_the_image(layered, docker_image) -> None:  # noqa: F811
    problem, tag, lines = layered
    assert tag != docker_image and any(line.startswith(f"built {tag}") for line in lines), lines
    assert run_in(tag, "import tabulate; print(tabulate.__version__)").strip() == "0.9.0"
    # numpy, asked for too, is the image's own: not a second copy shadowing it
    assert run_in(tag, WHERE) == run_in(docker_image, WHERE)


def test_the_layer_is_reused(layered) -> None:
    problem, tag, _ = layered
    client = engine()
    image_id = client.images.get(tag).id
    lines: list[str] = []
    assert problem_image(client, problem, log=lines.append) == tag and lines == []
    assert find_problem_image(client, problem) == tag
    assert client.images.get(tag).id == image_id
    r = evolve("sandbox", "build", "--problem", problem)
    assert r.returncode == 0 and r.stdout.strip() == f"{tag} (up to date)", r.stderr


def test_the_docker_sandbox_runs_the_layered_image(layered) -> None:
    problem, tag, _ = layered
    sandbox = make_sandbox(
        "docker", 1, run_id=f"test-req-{uuid.uuid4().hex[:6]}", problem_dir=str(problem)
    )
    try:
        assert sandbox.image == tag  # type: ignore[attr-defined]
    finally:
        sandbox.close()


def test_a_problem_without_requirements_runs_the_image_as_it_is(docker_image, tmp_path) -> None:  # noqa: F811
    (tmp_path / "requirements.txt").write_text("# nothing needed\n\n")
    assert problem_image(engine(), tmp_path, log=pytest.fail) == docker_image
    assert find_problem_image(engine(), tmp_path) == docker_image


def test_a_bad_requirements_file_is_one_line_naming_it(docker_image, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "requirements.txt").write_text("this is not a requirement!\n")
    with pytest.raises(ImageError, match="requirements.txt: pip cannot install it"):
        problem_image(engine(), tmp_path, log=lambda line: None)
    r = evolve("sandbox", "build", "--problem", tmp_path)
    assert r.returncode == 2 and r.stdout == "", r
    *progress, error = r.stderr.splitlines()  # "building ...", then the error: one line
    assert error.startswith("evolve sandbox: error: ") and "Traceback" not in r.stderr, r.stderr
    assert f"{tmp_path}/requirements.txt: pip cannot install it" in error, error
    assert "Invalid requirement" in error and len(progress) <= 1, r.stderr


# ---- the local sandbox: what this interpreter lacks ----------------------------------


def test_missing_requirements_of_the_local_environment(tmp_path: Path) -> None:
    assert missing_requirements(tmp_path) == []  # no requirements.txt: nothing missing
    (tmp_path / "requirements.txt").write_text(
        "# the evaluator's imports\n"
        f"{SMALL}  # not installed here\n"
        "numpy\n"
        "NumPy>=1.0 --hash=sha256:0123\n"
        "numpy<1\n"
        'nosuch-package>=1 ; python_version < "3"\n'
        "-r other-requirements.txt\n"
        "--index-url https://example.invalid/simple\n"
    )
    assert missing_requirements(tmp_path) == [SMALL, "numpy<1"]


def test_a_skydiscover_dockerfiles_pip_install_is_in_the_layer(docker_image, tmp_path) -> None:  # noqa: F811
    """`RUN pip install PKG` in a SkyDiscover folder's evaluator/Dockerfile: the same layer as
    its evaluator/requirements.txt (SMALL here), with the image's numpy untouched."""
    import shutil

    from tests.test_skydiscover_folders import FIXTURE

    folder = Path(shutil.copytree(FIXTURE, tmp_path / "pick"))
    (folder / "evaluator" / "requirements.txt").write_text(f"# {uuid.uuid4()}\nnumpy>=1.20\n")
    dockerfile = folder / "evaluator" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"RUN pip install --no-cache-dir {SMALL}\n")
    client = engine()
    lines: list[str] = []
    tag = problem_image(client, folder, log=lines.append)
    try:
        assert any(f"Dockerfile's pip install {SMALL}" in line for line in lines), lines
        assert run_in(tag, "import tabulate; print(tabulate.__version__)").strip() == "0.9.0"
        assert run_in(tag, WHERE) == run_in(docker_image, WHERE)
    finally:
        client.images.remove(tag, force=True)
