"""`evolve data fetch`: the real download code, against a local HTTP server on 127.0.0.1."""

from __future__ import annotations

import functools
import hashlib
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from evolve.testing.cli_helpers import ROOT, evolve

KIT = ROOT / "tests" / "fixtures" / "kit_problem"


def _problem(tmp_path, sha256: str):
    """A copy of the kit fixture whose one data file has a url on the local server."""
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(KIT / "main" / "data" / "values.json", served / "values.json")
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(SimpleHTTPRequestHandler, directory=served)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    problem = tmp_path / "kit" / "main"
    shutil.copytree(KIT, tmp_path / "kit")
    url = f"http://127.0.0.1:{server.server_address[1]}/values.json"
    with open(problem / "problem.toml", "a") as f:
        f.write(f'\n[[data]]\npath = "values.json"\nurl = "{url}"\nsha256 = "{sha256}"\n')
    return problem, server


def test_fetch_downloads_and_verifies(tmp_path):
    good = hashlib.sha256((KIT / "main" / "data" / "values.json").read_bytes()).hexdigest()
    problem, server = _problem(tmp_path, good)
    try:
        (problem / "data" / "values.json").write_text("stale")
        r = evolve("data", "fetch", str(problem))
        assert r.returncode == 0, r.stderr
        assert "values.json: downloaded from http://127.0.0.1" in r.stdout
        assert (problem / "data" / "values.json").read_bytes() == (
            KIT / "main" / "data" / "values.json"
        ).read_bytes()
    finally:
        server.shutdown()


def test_fetch_refuses_a_mismatch_and_keeps_the_old_file(tmp_path):
    problem, server = _problem(tmp_path, "0" * 64)
    try:
        before = (problem / "data" / "values.json").read_bytes()
        r = evolve("data", "fetch", str(problem))
        assert r.returncode == 2 and "does not match SHA-256 " + "0" * 64 in r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert (problem / "data" / "values.json").read_bytes() == before
        assert not list((problem / "data").glob(".part-*"))
    finally:
        server.shutdown()


def test_a_data_file_replaced_by_hand_says_which_line_to_change(tmp_path):
    """The scaffold says to replace data/jobs.json: `check` then names both hashes and the
    problem.toml line, and does not send the user to a fetch that has no url to fetch."""
    r = evolve("new", tmp_path / "mine")
    assert r.returncode == 0, r.stderr
    jobs = tmp_path / "mine" / "data" / "jobs.json"
    jobs.write_text(jobs.read_text().replace("[", "[ ", 1))
    got = hashlib.sha256(jobs.read_bytes()).hexdigest()
    r = evolve("check", tmp_path / "mine", "--sandbox", "local")
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f'set sha256 = "{got}" there' in r.stderr and 'path = "jobs.json"' in r.stderr
    assert "evolve data fetch" not in r.stderr and "Traceback" not in r.stderr
