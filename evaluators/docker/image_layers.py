"""A problem's own requirements.txt and tools (evaluators/docker/tool_layer.py), layered on
the sandbox image for the Docker sandbox.

The container has no network, so the host's pip fetches the wheels (its config, index
and proxy apply) for the image's Python and platform, and a one-step Dockerfile copies
them into the image's first site folder (/usr/local/lib/python3.X/dist-packages on the
Debian image). The tag, `evolve-sandbox-problem:<hash>`, is a hash of the base image's
id, the requirements file's bytes and the tools' plan, so a layer is built once and
shared by problems with the same inputs; `force` rebuilds it (pip resolves unpinned lines
anew).

The image's own packages are never shadowed: pip resolves with each of them pinned to
the image's version (a constraints file), and installs only the distributions the image
lacks. A requirement that contradicts the image (numpy<2 beside the image's numpy 2)
fails the build with pip's explanation instead of breaking scipy at import time. Wheels
only: an sdist-only package cannot be built for the image here. Files that
requirements.txt includes (`-r other.txt`) are not part of the tag: `--force` after
changing them.

pip reads the file as pip does (relative paths from its folder), its option lines
included. The one worth knowing: PyPI's Linux torch wheels pull several GB of NVIDIA
CUDA libraries that the sandbox cannot use; a line

    --extra-index-url https://download.pytorch.org/whl/cpu

above `torch` makes the layer take PyTorch's CPU-only build (a few hundred MB) instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluators.docker import tool_layer
from evaluators.docker.dockerfile_pip import dockerfile_packages, layer_requirements
from evaluators.docker.image import (
    ImageError,
    build_context,
    digest,
    exists,
    find_image,
    smoke_test,
    wanted_image,
)
from evaluators.docker.tool_layer import ToolPlan

REPO = "evolve-sandbox-problem"
REQUIREMENTS = "requirements.txt"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH = ("torch", "torchvision", "torchaudio")
_INDEX_OPTIONS = ("--index-url", "-i", "--extra-index-url")
_PIP = (sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input")
RECIPE = "pip --target, image packages as constraints, v1"  # in the tag: a change rebuilds
DOCKERFILE = "# A problem's layer on the sandbox image (evaluators/docker/image_layers.py).\n"
# Run in the base image: what pip must target, and what the image already has.
PROBE = """\
import json, os, platform, site, sys
from importlib import metadata
dists = {d.metadata["Name"]: d.version for d in metadata.distributions() if d.metadata["Name"]}
print(json.dumps({"python": "%d.%d" % sys.version_info[:2], "machine": platform.machine(),
                  "libc": os.confstr("CS_GNU_LIBC_VERSION") or "", "site": site.getsitepackages()[0],
                  "dists": dists}))
"""


def requirements_file(problem_dir: str | Path) -> Path | None:
    """The problem's requirements.txt when it names anything (not only comments): a
    SkyDiscover folder's is its evaluator/'s (where its Dockerfile installs it from)."""
    path = Path(problem_dir) / REQUIREMENTS
    bench = Path(problem_dir) / "evaluator"
    if not path.is_file() and (bench / "evaluate.sh").is_file():
        path = bench / REQUIREMENTS
    if not path.is_file():
        return None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ImageError(f"{path}: cannot read it: {e}") from None
    return path if any(ln.strip() and not ln.lstrip().startswith("#") for ln in lines) else None


@dataclass(frozen=True)
class LayerPlan:
    """How the host's pip resolves a requirements.txt for the image: the dry run's command
    (run in the file's folder) and what the file asks of the package index."""

    requirements: Path  # absolute, whatever the caller's working directory
    dry_run: tuple[str, ...]
    wheels: tuple[str, ...]  # the image's Python and platforms, for the install that follows
    indexes: tuple[str, ...]  # the index URLs its option lines name, in order
    notes: tuple[str, ...]  # for the build's log: where torch comes from, and its size


def requirement_lines(requirements: Path) -> tuple[list[str], list[str]]:
    """(the canonical names of the file's requirements, the index URLs its option lines
    name), as pip reads the file; `-r` includes are not followed."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    names: list[str] = []
    indexes: list[str] = []
    text = requirements.read_text(encoding="utf-8", errors="replace").replace("\\\n", "")
    for raw in text.splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if line.startswith("-"):
            option, _, value = line.replace("=", " ", 1).partition(" ")
            if option in _INDEX_OPTIONS and value.strip():
                indexes.append(value.strip())
        elif line:
            try:  # `pkg==1 --hash=...`: per-requirement options end the spec
                names.append(canonicalize_name(Requirement(re.split(r"\s--?\w", line)[0]).name))
            except InvalidRequirement:
                continue  # a path or a URL: pip learns its name only by building it
    return names, indexes


def layer_plan(requirements: Path, target: dict, constraints: str, report: str) -> LayerPlan:
    """The dry run that decides what the layer adds to the image (`target`: _probe's)."""
    requirements = Path(requirements).resolve()  # pip runs in its folder: never a relative path
    names, indexes = requirement_lines(requirements)
    wheels = ["--only-binary=:all:", "--python-version", target["python"], "--implementation", "cp"]
    for platform in _platforms(target):
        wheels += ["--platform", platform]
    cmd = [*_PIP, "--dry-run", "--target", os.path.dirname(report), "--report", report, *wheels]
    cmd += ["-c", constraints, "-r", str(requirements)]  # --target: ignores the host's packages
    notes = []
    torch = [n for n in names if n in TORCH]
    if torch and any(i.rstrip("/") == TORCH_CPU_INDEX for i in indexes):
        notes.append(f"{', '.join(torch)}: PyTorch's CPU-only wheels from {TORCH_CPU_INDEX}")
    elif torch:
        notes.append(
            f"{', '.join(torch)}: PyPI's wheels pull several GB of NVIDIA CUDA libraries the "
            f"sandbox cannot use; a line `--extra-index-url {TORCH_CPU_INDEX}` in "
            f"{requirements} takes the CPU-only build instead"
        )
    return LayerPlan(requirements, tuple(cmd), tuple(wheels), tuple(indexes), tuple(notes))


@dataclass(frozen=True)
class LayerInputs:
    """What a problem's layer adds to the sandbox image: its requirements.txt (None when it
    has none) and the tools its evaluator runs (evaluators/docker/tool_layer.py)."""

    requirements: Path | None
    tools: ToolPlan
    # a SkyDiscover evaluator/Dockerfile's `RUN pip install PKG ...` (dockerfile_pip.py)
    packages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.requirements is not None or bool(self.tools) or bool(self.packages)


def layer_inputs(problem_dir: str | Path, tools: tuple[str, ...] = ()) -> LayerInputs:
    """The problem's layer inputs; ImageError, one line, for a file or tool it cannot use."""
    bench = Path(problem_dir) / "evaluator"
    packages = dockerfile_packages(bench) if (bench / "evaluate.sh").is_file() else ()
    return LayerInputs(
        requirements_file(problem_dir), tool_layer.plan(tools, problem_dir), packages
    )


def layer_tag(client, base: str, inputs: LayerInputs) -> str:
    """The layered image's tag: the base image's id (not its name, which may move) + the file
    + the tools (only when there are any: a requirements-only layer keeps its tag)."""
    base_id = client.images.get(base).id
    req = inputs.requirements.read_bytes() if inputs.requirements else b""
    tools = (tool_layer.dockerfile_lines(inputs.tools), inputs.tools.key()) if inputs.tools else ()
    extra = ("\n".join(inputs.packages),) if inputs.packages else ()  # none: the tag as before
    return f"{REPO}:{digest(RECIPE, DOCKERFILE, base_id, req, *map(str, tools), *extra)}"


def find_problem_image(
    client,
    problem_dir: str | Path,
    tools: tuple[str, ...] = (),
    inputs: LayerInputs | None = None,
) -> str | None:
    """The image this problem's evaluations run in, if built: the sandbox image, or its layer
    with the problem's requirements.txt and tools (`inputs`, when the caller has them: the
    tools' plan runs the toolchain); None when that image is not built yet."""
    base = find_image(client)
    if base is None:
        return None
    inputs = layer_inputs(problem_dir, tools) if inputs is None else inputs
    if not inputs:
        return base
    tag = layer_tag(client, base, inputs)
    return tag if exists(client, tag) else None


def problem_image(
    client,
    problem_dir: str | Path,
    log: Callable[[str], None] = print,
    base: str | None = None,
    force: bool = False,
    tools: tuple[str, ...] = (),
    inputs: LayerInputs | None = None,
) -> str:
    """The image for this problem, layering its requirements.txt and tools on `base`
    (default: the built sandbox image) unless that layer exists. ImageError, one line,
    when it cannot."""
    base = base or find_image(client)
    if base is None:
        raise ImageError(
            f"the sandbox image {wanted_image()} is not built: run `evolve sandbox build`"
        )
    inputs = layer_inputs(problem_dir, tools) if inputs is None else inputs
    if not inputs:
        return base
    tag = layer_tag(client, base, inputs)
    if not force and exists(client, tag):
        return tag
    what = [str(inputs.requirements)] if inputs.requirements else []
    what += [f"Dockerfile's pip install {' '.join(inputs.packages)}"] if inputs.packages else []
    what += [f"tools {', '.join(tools)}"] if inputs.tools else []
    return build_layer(client, base, tag, inputs, " and ".join(what), log, tools=tools)


def build_layer(
    client,
    base: str,
    tag: str,
    inputs: LayerInputs,
    what: str,
    log: Callable[[str], None] = print,
    source_only: Path | None = None,
    tools: tuple[str, ...] = (),
    harness: bool = True,
) -> str:
    """Layer `inputs` (a requirements.txt, tools) on `base` as `tag`, checked by running it;
    `source_only`: a list of pure-Python packages whose wheels the host builds first;
    `harness` False: `base` is below the harness layer (the image's own pip layer)."""
    t0 = time.monotonic()
    target = _probe(client, base)
    log(f"building {tag}: {what} (CPython {target['python']} {target['machine']}) on {base}")
    added: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="evolve-layer-") as ctx:
        steps = ["ARG BASE", "FROM ${BASE}"]
        requirements = layer_requirements(inputs.requirements, inputs.packages, ctx)
        if requirements is not None:
            site = os.path.join(ctx, "site")
            added = _pip_install(requirements, target, site, log, source_only)
            if added:  # an empty COPY before another COPY trips moby/moby#41595
                steps.append(f"COPY site/ {target['site']}/")
        if inputs.tools:
            status = _read(client, base, "/var/lib/dpkg/status")
            tool_layer.fill_context(inputs.tools, ctx, status, log)
            steps += tool_layer.dockerfile_lines(inputs.tools)
        Path(ctx, "Dockerfile").write_text(DOCKERFILE + "\n".join(steps) + "\n")
        build_context(client, ctx, "Dockerfile", tag, {"BASE": base})
    # every added distribution is visible, at its version, and the image's numpy still loads
    checks = [f"from importlib.metadata import version as v; {_check(added)}"]
    if inputs.tools:
        checks.append(tool_layer.smoke_code(inputs.tools))
    smoke_test(client, tag, extra="; ".join(checks), harness=harness)
    summary = ", ".join(f"{n} {v}" for n, v in added.items()) or "no Python package"
    log(
        f"built {tag} in {time.monotonic() - t0:.0f} s: {summary}; tools: {', '.join(tools) or 'none'}"
    )
    return tag


def _check(added: dict[str, str]) -> str:
    return f"assert {{n: v(n) for n in {list(added)!r}}} == {added!r}"


def _read(client, image: str, path: str) -> bytes:
    """A file of `image`, read by running it offline."""
    try:
        return client.containers.run(image, ["cat", path], network_mode="none", remove=True)
    except Exception as e:
        raise ImageError(f"cannot read {path} of {image}: {e}") from None


def _probe(client, base: str) -> dict:
    """What the base image runs: Python version, machine, libc, site folder, distributions."""
    try:
        out = client.containers.run(
            base,
            ["python3", "-s", "-c", PROBE],
            network_mode="none",
            remove=True,
            user="10001:10001",
            read_only=True,
        )
        return json.loads(out)
    except Exception as e:
        raise ImageError(f"cannot inspect the Python of {base}: {e}") from None


def _platforms(target: dict) -> list[str]:
    """pip --platform values for the image's glibc: manylinux_2_N down to 2_17, and aliases."""
    libc, arch = target["libc"].split(), target["machine"]
    if len(libc) != 2 or libc[0] != "glibc":
        raise ImageError(f"the sandbox image's libc is {target['libc'] or 'unknown'}, not glibc")
    minor = int(libc[1].split(".")[1])
    tags = [f"manylinux_2_{m}_{arch}" for m in range(minor, 16, -1)]
    return tags + [f"manylinux{year}_{arch}" for year in ("2014", "2010", "1")]


def _constraints(dists: dict[str, str]) -> tuple[str, set[str]]:
    """(constraints file pinning the image's distributions, their canonical names). A version
    pip cannot pin (not PEP 440, or Debian's 0.0.0 for kiwisolver and mpmath) stays unpinned:
    the image's copy is kept all the same."""
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    pins = []
    for name, version in dists.items():
        try:
            if Version(version) != Version("0"):
                pins.append(f"{canonicalize_name(name)}=={Version(version).public}\n")
        except InvalidVersion:
            pass
    return "".join(sorted(pins)), {canonicalize_name(name) for name in dists}


def _pip_install(
    requirements: Path,
    target: dict,
    site: str,
    log: Callable[[str], None] = print,
    source_only: Path | None = None,
) -> dict[str, str]:
    """Install into `site` what the requirements need beyond the image; {name: version}.
    `source_only`: a list of pure-Python packages PyPI has as sdists alone, whose wheels
    the host builds first for pip to find beside the index's."""
    from packaging.utils import canonicalize_name

    text, present = _constraints(target["dists"])
    with tempfile.TemporaryDirectory(prefix="evolve-pip-") as tmp:
        constraints, report = os.path.join(tmp, "constraints.txt"), os.path.join(tmp, "report.json")
        Path(constraints).write_text(text)
        plan = layer_plan(requirements, target, constraints, report)
        for note in plan.notes:
            log(note)
        links = _source_wheels(source_only, os.path.join(tmp, "wheels"), log) if source_only else []
        _pip(plan.requirements, target, [*plan.dry_run, *links])
        install = json.loads(Path(report).read_text())["install"]
        new = [i for i in install if canonicalize_name(i["metadata"]["name"]) not in present]
        os.makedirs(site)
        if new:
            _pip(
                plan.requirements,
                target,
                [*_PIP, "--quiet", "--no-deps", "--target", site, *plan.wheels, *map(_url, new)],
            )
    shutil.rmtree(os.path.join(site, "bin"), ignore_errors=True)  # scripts with the host's shebang
    for root, dirs, files in os.walk(site):  # readable by the sandbox's uids, whatever our umask
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            path = os.path.join(root, f)
            os.chmod(path, os.stat(path).st_mode & 0o777 | 0o444)
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in new}


def _source_wheels(listing: Path, folder: str, log: Callable[[str], None]) -> list[str]:
    """Build the wheels of `listing`'s pure-Python sdists on the host; pip's --find-links
    option for them. ImageError, naming the file, when one is not pure Python."""
    specs = [ln.split("#")[0].strip() for ln in listing.read_text(encoding="utf-8").splitlines()]
    specs = [spec for spec in specs if spec]
    if not specs:
        return []
    log(f"building the wheels of {', '.join(specs)} from source ({listing.name})")
    cmd = [*_PIP[:3], "wheel", "--quiet", "--no-deps", "--no-binary", ":all:", "-w", folder]
    proc = subprocess.run(
        [*cmd, *specs], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode != 0:
        last = proc.stdout.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        raise ImageError(f"{listing}: pip wheel cannot build {', '.join(specs)}: {last[0]}")
    impure = [n for n in sorted(os.listdir(folder)) if not n.endswith("-none-any.whl")]
    if impure:
        raise ImageError(f"{listing}: {', '.join(impure)} is not pure Python: take a binary wheel")
    return ["--find-links", folder]


def _url(item: dict) -> str:
    """The exact artifact pip chose in the dry run, with its hash for pip to check."""
    info = item["download_info"]
    hashes = info.get("archive_info", {}).get("hashes") or {}
    return f"{info['url']}#sha256={hashes['sha256']}" if "sha256" in hashes else info["url"]


def _pip(requirements: Path, target: dict, cmd: list[str]) -> None:
    proc = subprocess.run(
        cmd, cwd=requirements.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if proc.returncode == 0:
        return
    lines, keep = [], False  # pip's errors, and the lines that say what conflicts
    for line in proc.stdout.splitlines():
        keep = line.startswith("ERROR:") or (keep and line.startswith(" "))
        if keep or line.startswith("The conflict is caused by"):
            keep = True
            lines.append(line.strip())
    last = proc.stdout.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
    detail = "; ".join(lines or last)  # the last line: "No module named pip", say
    raise ImageError(
        f"{requirements}: pip cannot install it in the sandbox image (CPython {target['python']} "
        f"{target['machine']}, wheels only, beside the image's own packages): {detail[:1000]}"
    )
