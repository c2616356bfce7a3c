"""A hostile agent command tries each escape: read the problem folder, evaluator, held-out
data and archive by absolute path, list the real home, reach the host's loopback and the
internet, write outside its workspace, see the environment, print a fake score. It gets
nothing: every attempt is BLOCKED (written into its own program, which the test reads),
and its candidate is scored by the real evaluator."""

from __future__ import annotations

import ast
import socket
import threading

from evaluators.local.bubblewrap import _python_roots
from tests.test_agent import rows, toy
from tests.test_agent_command import agent, child, run

SECRET = "S3CRET-7781"


def _server() -> tuple[socket.socket, int]:
    """A host loopback server that hands out the secret to whoever connects."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.sendall(SECRET.encode())
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, srv.getsockname()[1]


def test_a_hostile_command_gets_nothing_and_its_fake_score_counts_for_nothing(
    tmp_path, monkeypatch
):
    problem = toy(tmp_path)
    (problem / "evaluator.py").write_text(
        (problem / "evaluator.py").read_text() + f"\n# {SECRET}\n"
    )
    (problem / "heldout.csv").write_text(f"x,y\n{SECRET},1\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "notes.txt").write_text(SECRET)
    monkeypatch.setenv("EVOLVE_TEST_SECRET", SECRET)
    monkeypatch.setenv("AGENT_KEY", "given")
    srv, port = _server()
    targets = [problem / "evaluator.py", problem / "heldout.csv", runs / "notes.txt"]
    try:
        summary = run(
            problem,
            tmp_path,
            agent("hostile", *map(str, targets), str(port)),
            agent_env=["AGENT_KEY"],
        )
    finally:
        srv.close()
    assert summary.status == "finished"
    status, code, _ = child(tmp_path)
    assert status == "ok" and SECRET not in code
    notes = [line[2:] for line in code.splitlines() if line.startswith("# ") and ": " in line]
    env_line = next(n for n in notes if n.startswith("env: "))
    assert env_line == "env: ['AGENT_KEY', 'HOME', 'LANG', 'PATH', 'PWD']"  # PWD: bwrap's --chdir
    attempts = [n for n in notes if not n.startswith("env: ")]
    assert len(attempts) == 3 * len(targets) + 3
    home = attempts.pop(-3)
    assert all(": BLOCKED " in n for n in attempts), attempts
    # the real home shows nothing but the folders leading to the interpreter (read-only)
    if ": GOT " in home:
        roots = [r for r in _python_roots() if r.startswith("/root/")]
        shown = ast.literal_eval(home.split(": GOT ", 1)[1])
        assert all(any(r.startswith(f"/root/{name}/") for r in roots) for name in shown), home
    assert not any(p.with_name(p.name + ".pwn").exists() for p in targets)
    # the fake score it printed counts for nothing: the real evaluator scored it
    (score,) = rows(tmp_path, "SELECT score FROM programs WHERE iteration=1")[0]
    assert score == 0.0


def test_agent_network_opens_the_network_and_nothing_else(tmp_path):
    problem = toy(tmp_path)
    srv, port = _server()
    try:
        run(
            problem,
            tmp_path,
            agent("hostile", str(problem / "seed.py"), str(port)),
            agent_network=True,
        )
    finally:
        srv.close()
    _, code, _ = child(tmp_path)
    assert f"local port: GOT {SECRET!r}" in code  # the host's loopback: reachable now
    assert f"read {problem / 'seed.py'}: BLOCKED" in code  # the files: still out of reach
