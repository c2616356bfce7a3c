"""`evolve sandbox build`'s decisions, without building anything: what --force and
--force-base rebuild, the pip run of a problem layer (its requirements.txt named by a
relative path, PyTorch's CPU-only index). A fake engine stands in for Docker's image
store; the pip run is real, offline, from a local wheel."""

from __future__ import annotations

import base64
import hashlib
import platform
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluators.docker import image
from evaluators.docker.image import base_tag, build_plan, debian_tag, pypi_tag, registry_tag
from evaluators.docker.image_layers import (
    TORCH_CPU_INDEX,
    _pip_install,
    _source_wheels,
    layer_plan,
)
from evolve.testing.cli_helpers import evolve

docker_errors = pytest.importorskip("docker.errors")
TARGET = {  # what _probe reports of the Debian image
    "python": "3.11",
    "machine": platform.machine(),
    "libc": "glibc 2.36",
    "site": "/usr/lib/python3/dist-packages",
    "dists": {"numpy": "1.24.2"},
}


class Images:
    """The part of docker-py's client that build_plan asks: client.images.get(tag)."""

    def __init__(self, *tags: str) -> None:
        self.tags = set(tags)
        self.images = self

    def get(self, tag: str) -> SimpleNamespace:
        if tag not in self.tags:
            raise docker_errors.ImageNotFound(tag)
        return SimpleNamespace(id=f"sha256:{tag}")


ALL = (base_tag(), pypi_tag(), debian_tag())


def test_nothing_is_rebuilt_when_every_image_exists():
    plan = build_plan(Images(*ALL))
    assert (plan.build_base, plan.build_pypi, plan.build_image) == (False, False, False)


def test_force_rebuilds_the_image_on_its_base_without_debootstrap():
    plan = build_plan(Images(*ALL), force=True)
    assert (plan.base, plan.pypi) == (base_tag(), pypi_tag())
    assert (plan.build_base, plan.build_pypi, plan.build_image) == (False, False, True)


def test_force_base_debootstraps_the_base_again():
    plan = build_plan(Images(*ALL), force_base=True)
    assert (plan.build_base, plan.build_pypi, plan.build_image) == (True, True, True)


def test_a_missing_base_is_built_and_a_missing_image_alone_is_not_a_base_build():
    assert build_plan(Images()).build_base
    plan = build_plan(Images(base_tag()))
    assert (plan.build_base, plan.build_pypi, plan.build_image) == (False, True, True)
    plan = build_plan(Images(base_tag(), pypi_tag()))
    assert (plan.build_base, plan.build_pypi, plan.build_image) == (False, False, True)


def test_requirements_txt_changes_the_pip_layer_and_not_the_debian_base(tmp_path, monkeypatch):
    copy = tmp_path / "docker"
    copy.mkdir()
    for f in image.DOCKER_DIR.iterdir():
        if f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    monkeypatch.setattr(image, "DOCKER_DIR", copy)
    assert (base_tag(), pypi_tag(), debian_tag()) == ALL
    for name in ("requirements.txt", "source-only.txt"):
        (copy / name).write_text((copy / name).read_text() + "tabulate==0.9.0\n")
        assert base_tag() == ALL[0] and pypi_tag() != ALL[1] and debian_tag() != ALL[2]
        assert pypi_tag().startswith("evolve-sandbox-pypi:")


# What `pip install openevolve==0.4.1 shinka-evolve==0.0.7` asks for (their wheels' Requires-
# Dist, extras aside): the image's requirements.txt pins every one (issue 41).
OPENEVOLVE_041 = ("openai", "pyyaml", "numpy", "tqdm", "flask", "dacite", "cloudpickle")
SHINKA_007 = (
    "openai numpy pandas anthropic requests boto3 pydantic backoff python-dotenv instructor "
    "python-levenshtein radon unidiff dill hydra-core matplotlib networkx seaborn moviepy "
    "scikit-learn adjusttext markdown aiofiles google-genai psutil httpx"
).split()


def test_the_image_requirements_pin_what_openevolve_and_shinka_installs_bring():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = (image.DOCKER_DIR / "requirements.txt").read_text().splitlines()
    reqs = [Requirement(ln) for ln in lines if ln.strip() and not ln.startswith("#")]
    assert all(str(r.specifier).startswith("==") for r in reqs), "every line pinned"
    names = {canonicalize_name(r.name) for r in reqs}
    wanted = {canonicalize_name(n) for n in (*OPENEVOLVE_041, *SHINKA_007)}
    assert wanted <= names, sorted(wanted - names)
    assert not names & {"openevolve", "shinka-evolve", "torch", "jax"}  # stand-ins; no GPU


def test_a_source_only_listing_of_nothing_builds_nothing(tmp_path):
    (tmp_path / "source-only.txt").write_text("# none\n\n")
    assert _source_wheels(tmp_path / "source-only.txt", str(tmp_path / "w"), pytest.fail) == []


def test_a_source_only_package_that_will_not_build_is_one_line_naming_the_file(tmp_path):
    from evaluators.docker.image import ImageError

    listing = tmp_path / "source-only.txt"
    listing.write_text(f"{tmp_path / 'nowhere'}\n")
    with pytest.raises(ImageError) as e:
        _source_wheels(listing, str(tmp_path / "w"), lambda _: None)
    message = str(e.value)
    assert message.startswith(f"{listing}: pip wheel cannot build") and "\n" not in message


def test_the_registry_recipe_has_no_debian_base():
    plan = build_plan(Images(registry_tag()), dockerfile=True, force_base=True)
    assert (plan.tag, plan.base, plan.build_base, plan.build_image) == (
        registry_tag(),
        None,
        False,
        True,
    )


def test_the_cli_offers_force_base():
    r = evolve("sandbox", "build", "--help")
    assert r.returncode == 0 and "--force-base" in r.stdout
    assert "with --problem only the problem's layer" in " ".join(r.stdout.split())


# ---- the problem layer's pip run ------------------------------------------------------------


def _wheel(folder: Path) -> str:
    """A pure-Python wheel of `tinylayer` 0.1 in folder; its file name."""
    name = "tinylayer-0.1-py3-none-any.whl"
    files = {
        "tinylayer/__init__.py": "VALUE = 1\n",
        "tinylayer-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinylayer\nVersion: 0.1\n",
        "tinylayer-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    with zipfile.ZipFile(folder / name, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
            h = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
            record.append(f"{path},sha256={h.decode()},{len(text)}")
        z.writestr(
            "tinylayer-0.1.dist-info/RECORD",
            "\n".join(record) + "\ntinylayer-0.1.dist-info/RECORD,,\n",
        )
    return name


def test_a_relative_problem_folder_installs_its_requirements(tmp_path, monkeypatch):
    """`sandbox build --problem REL`: pip runs in the folder, so the file must not be named
    relative to the caller's directory (it was: 'Could not open requirements file')."""
    folder = tmp_path / "problems" / "mine"
    folder.mkdir(parents=True)
    wheel = _wheel(folder)
    (folder / "requirements.txt").write_text(f"--no-index\n./{wheel}\n")  # relative to the folder
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "site"
    added = _pip_install(
        Path("problems/mine/requirements.txt"), TARGET, str(site), log=lambda _: None
    )
    assert added == {"tinylayer": "0.1"}
    assert (site / "tinylayer" / "__init__.py").read_text() == "VALUE = 1\n"


def test_layer_plan_takes_torch_from_the_cpu_index_when_the_file_asks(tmp_path, monkeypatch):
    (tmp_path / "requirements.txt").write_text(
        f"# CPU-only PyTorch for the sandbox\n--extra-index-url {TORCH_CPU_INDEX}\ntorch==2.5.1\n"
    )
    monkeypatch.chdir(tmp_path.parent)
    plan = layer_plan(Path(tmp_path.name) / "requirements.txt", TARGET, "c.txt", "/tmp/x/r.json")
    assert plan.requirements == tmp_path / "requirements.txt"
    assert plan.dry_run[-2:] == ("-r", str(tmp_path / "requirements.txt"))
    assert "--only-binary=:all:" in plan.dry_run and "--dry-run" in plan.dry_run
    assert plan.indexes == (TORCH_CPU_INDEX,)
    assert plan.notes == (f"torch: PyTorch's CPU-only wheels from {TORCH_CPU_INDEX}",)


def test_layer_plan_says_what_pypis_torch_costs(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch\ntorchvision>=0.2  # vision\nnumpy\n")
    plan = layer_plan(tmp_path / "requirements.txt", TARGET, "c.txt", "/tmp/x/r.json")
    assert plan.indexes == ()
    [note] = plan.notes
    assert note.startswith("torch, torchvision: PyPI's wheels pull several GB of NVIDIA CUDA")
    assert f"--extra-index-url {TORCH_CPU_INDEX}" in note
