"""The Docker sandbox's image: its tag (a hash of its inputs), lookup and build.

Two recipes make the same image (evaluators/inside/, the harness and all it needs, and the
agent in /opt/evolve, user 10001, python3 with numpy, scipy, pandas, networkx,
scikit-learn and matplotlib from PyPI's wheels):

- Debian (the default, no registry needed): debootstrap's minbase plus
  docker/packages.txt (less docker/prune.txt) from a Debian mirror, `docker
  import`-ed as the base `evolve-sandbox-base:<hash>` (Python alone); the host's pip layers
  docker/requirements.txt on it (the scientific stack and what OpenEvolve, ShinkaEvolve and
  GEPA installs bring) as `evolve-sandbox-pypi:<hash>`; then docker/Dockerfile.layer adds the harness.
- Registry: docker/Dockerfile, FROM python:3.11-slim, for machines that can pull.

Each tag is a hash of what went into the image, so a build is skipped when an
image of that tag exists, and a change to the harness rebuilds only the thin
top layer, not the Debian base. What one problem alone needs (its
requirements.txt) is layered on top by image_layers.py.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DOCKER_DIR = Path(__file__).resolve().parent
EVALUATORS = DOCKER_DIR.parent  # the build context's source: the Dockerfiles name paths in it
INSIDE = EVALUATORS / "inside"  # what runs in a container: copied whole to /opt/evolve
REPO = "evolve-sandbox"
BASE_REPO = "evolve-sandbox-base"
PYPI_REPO = "evolve-sandbox-pypi"
PYPI_RECIPE = "requirements.txt by the host's pip on the base, v1"  # a change rebuilds it
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
IMAGE_ENV = "EVOLVE_SANDBOX_IMAGE"  # use this image instead of the built one
MIRROR_ENV = "EVOLVE_DEBIAN_MIRROR"
_CACHES = ("__pycache__", "*.pyc")


def sandbox_files() -> list[Path]:
    """The files of evaluators/inside/ that both Dockerfiles copy (the harness, the kit, the
    candidate's worker, the OpenEvolve runner and its stand-in package), caches aside."""
    return [
        p
        for p in sorted(INSIDE.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


_AGENT_FILES = (
    DOCKER_DIR / "agent.py",
    *(  # each with its name: a renamed file changes the image
        part for path in sandbox_files() for part in (str(path.relative_to(EVALUATORS)), path)
    ),
)


class ImageError(RuntimeError):
    """The image cannot be built here; the message says why and what to do."""


def digest(*parts: bytes | str | Path) -> str:
    """12 hex digits of a SHA-256 over the parts (a Path: its bytes), each length-prefixed."""
    h = hashlib.sha256()
    for part in parts:
        data = part.read_bytes() if isinstance(part, Path) else part
        data = data.encode() if isinstance(data, str) else data
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()[:12]


def base_tag() -> str:
    """The Debian base: debootstrap of the suite with the listed packages."""
    inputs = (DOCKER_DIR / name for name in ("build-base.sh", "packages.txt", "prune.txt"))
    return f"{BASE_REPO}:{digest(SUITE, *inputs)}"


def pypi_tag() -> str:
    """The Debian base with requirements.txt's wheels (and source-only.txt's, built here)."""
    inputs = (DOCKER_DIR / name for name in ("requirements.txt", "source-only.txt"))
    return f"{PYPI_REPO}:{digest(PYPI_RECIPE, base_tag(), *inputs)}"


def debian_tag() -> str:
    """The image `evolve sandbox build` makes: the harness layered on the pip layer."""
    return f"{REPO}:{digest(pypi_tag(), DOCKER_DIR / 'Dockerfile.layer', *_AGENT_FILES)}"


def registry_tag() -> str:
    """The image `evolve sandbox build --dockerfile` makes from python:3.11-slim."""
    return f"{REPO}:py-{digest(DOCKER_DIR / 'Dockerfile', DOCKER_DIR / 'requirements.txt', *_AGENT_FILES)}"


def exists(client, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def find_image(client) -> str | None:
    """The image to run: $EVOLVE_SANDBOX_IMAGE, else a built one for the current inputs."""
    if os.environ.get(IMAGE_ENV):
        tag = os.environ[IMAGE_ENV]
        return tag if exists(client, tag) else None
    for tag in (debian_tag(), registry_tag()):
        if exists(client, tag):
            return tag
    return None


def wanted_image() -> str:
    """The name to tell the user about when no image is found."""
    return os.environ.get(IMAGE_ENV) or debian_tag()


@dataclass(frozen=True)
class BuildPlan:
    """What `build` does: the image's tag, the Debian base and its pip layer it stands on
    (None with the registry recipe), and which of the three it builds."""

    tag: str
    base: str | None
    build_base: bool  # debootstrap the base (minutes, root)
    build_image: bool  # the harness layer on the pip layer, or the registry image
    pypi: str | None = None
    build_pypi: bool = False  # requirements.txt's wheels on the base (a minute)


def build_plan(
    client, dockerfile: bool = False, force: bool = False, force_base: bool = False
) -> BuildPlan:
    """`force` rebuilds the image on the base it has (seconds); `force_base` debootstraps
    the base again too. Without either, only what is missing is built."""
    tag = registry_tag() if dockerfile else debian_tag()
    base, pypi = (None, None) if dockerfile else (base_tag(), pypi_tag())
    image = force or force_base or not exists(client, tag)
    layer = image and pypi is not None and (force_base or not exists(client, pypi))
    debootstrap = layer and base is not None and (force_base or not exists(client, base))
    return BuildPlan(tag, base, debootstrap, image, pypi, layer)


def debootstrap_base(client, tag: str, mirror: str, log: Callable[[str], None]) -> None:
    if shutil.which("debootstrap") is None:
        raise ImageError(
            "debootstrap is not installed (apt-get install debootstrap), or use "
            "`evolve sandbox build --dockerfile` where a registry can be reached"
        )
    if os.geteuid() != 0:
        raise ImageError(
            "building the Debian base needs root (debootstrap): run "
            "`sudo evolve sandbox build`, or `evolve sandbox build --dockerfile`"
        )
    packages = [
        ln.split("#")[0].strip() for ln in (DOCKER_DIR / "packages.txt").read_text().splitlines()
    ]
    log(
        f"building {tag}: debootstrap {SUITE} minbase + {', '.join(p for p in packages if p)} "
        f"from {mirror} (a few minutes, once)"
    )
    with tempfile.TemporaryDirectory(prefix="evolve-rootfs-", dir="/var/tmp") as tmp:
        rootfs, tar = os.path.join(tmp, "rootfs"), os.path.join(tmp, "rootfs.tar")
        logfile = os.path.join(tmp, "debootstrap.log")
        with open(logfile, "wb") as out:
            proc = subprocess.run(
                [
                    "sh",
                    str(DOCKER_DIR / "build-base.sh"),
                    rootfs,
                    tar,
                    SUITE,
                    mirror,
                    str(DOCKER_DIR / "packages.txt"),
                    str(DOCKER_DIR / "prune.txt"),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if proc.returncode != 0:
            with open(logfile, "rb") as f:
                tail = f.read()[-3000:].decode("utf-8", "replace")
            raise ImageError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(
            tar,
            repository=repo,
            tag=version,
            changes=[
                "ENV LANG=C.UTF-8",
                "ENV PATH=/usr/local/bin:/usr/bin:/bin",
                'CMD ["python3"]',
            ],
        )


def docker_build(
    client, dockerfile: str, tag: str, buildargs: dict, pull: bool, log: Callable[[str], None]
) -> None:
    log(f"building {tag} from evaluators/{dockerfile}")
    with tempfile.TemporaryDirectory(prefix="evolve-context-") as ctx:
        # Only what the Dockerfiles copy: never the caller's whole tree.
        os.mkdir(os.path.join(ctx, "docker"))
        skip = shutil.ignore_patterns(*_CACHES)
        shutil.copytree(INSIDE, os.path.join(ctx, "inside"), ignore=skip)
        for name in ("agent.py", "requirements.txt", "Dockerfile", "Dockerfile.layer"):
            shutil.copy(DOCKER_DIR / name, os.path.join(ctx, "docker"))
        build_context(client, ctx, dockerfile, tag, buildargs, pull)


# The classic builder's race when it commits a layer another build or prune just let go
# (moby/moby#41595, #37965): the same build succeeds when run again.
_LOST_LAYER = "layer does not exist"


def build_context(
    client, ctx: str, dockerfile: str, tag: str, buildargs: dict, pull: bool = False
) -> None:
    """`docker build` of the folder `ctx`, offline unless `pull`; ImageError on failure."""
    import docker.errors

    for attempt in range(2):
        try:
            client.images.build(
                path=ctx,
                dockerfile=dockerfile,
                tag=tag,
                buildargs=buildargs,
                pull=pull,
                rm=True,
                forcerm=True,
                network_mode="default" if pull else "none",
            )
            return
        except docker.errors.BuildError as e:
            if attempt == 0 and _LOST_LAYER in (e.msg or ""):
                continue
            lines = "".join(str(x.get("stream") or x.get("error") or "") for x in e.build_log)
            raise ImageError(f"docker build of {tag} failed: {e.msg}\n{lines[-3000:]}") from None
        except docker.errors.APIError as e:
            raise ImageError(f"docker build of {tag} failed: {e.explanation or e}") from None


def smoke_test(client, tag: str, extra: str = "", harness: bool = True) -> None:
    """The image runs the agent's imports (and `extra` code) as the sandbox user, offline;
    `harness` False: an image below the harness layer (numpy and `extra` alone)."""
    agent = "sys.path.insert(0, '/opt/evolve'); import harness; " if harness else ""
    code = f"import numpy, sys; {agent}" + (extra or "print(numpy.__version__)")
    try:
        client.containers.run(
            tag,
            ["python3", "-s", "-c", code],
            network_mode="none",
            remove=True,
            user="10001:10001",
            read_only=True,
        )
    except Exception as e:
        try:
            client.images.remove(tag)  # never leave a broken image under a "built" tag
        except Exception:
            pass
        raise ImageError(f"the new image {tag} does not run the harness: {e}") from None
