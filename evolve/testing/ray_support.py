"""A Ray cluster of two nodes on this machine, on 127.0.0.1 only, started with `ray start`.

Ray advertises and binds a node's address; on Linux it swaps a loopback
`--node-ip-address` for the machine's outward address unless
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, which in turn refuses to join a second node. So
the head starts with it set (and binds 127.0.0.1), and the worker node starts through
`python evolve/testing/ray_support.py start ...`, which keeps its loopback address as given.
Each node runs `ray start --block` in its own session, so a test can kill one node
(its raylet and workers) without `ray stop`, which would stop every Ray on the machine.
Token authentication is off for the cluster and every driver (RAY_AUTH_MODE=disabled):
Ray 2.60 turns it on for a head when ~/.ray/auth_token exists (a private instance writes
one), and a driver must then agree; these tests make both sides say the same.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).with_name("ray"))
AUTH_OFF = {"RAY_AUTH_MODE": "disabled"}
BASE_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "PYTHONPATH": str(ROOT), **AUTH_OFF}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackCluster:
    """Head plus worker nodes; `address` is what `--ray-address` takes."""

    def __init__(self, cpus_per_node: int = 1) -> None:
        self.cpus = cpus_per_node
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # unix socket paths stay short
        self.head: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _start(self, args: list[str], loopback_only: str, launcher: list[str]) -> subprocess.Popen:
        env = {**os.environ, **BASE_ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": loopback_only}
        log = open(os.path.join(self.temp, f"node-{len(self.workers)}-{time.time_ns()}.log"), "w")
        return subprocess.Popen(
            [
                *launcher,
                "start",
                "--block",
                "--node-ip-address=127.0.0.1",
                *args,
                f"--num-cpus={self.cpus}",
                "--object-store-memory=80000000",
                "--disable-usage-stats",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.temp,
        )

    def start(self, workers: int = 1) -> LoopbackCluster:
        try:
            self.head = self._start(
                [
                    "--head",
                    f"--port={self.port}",
                    "--include-dashboard=false",
                    f"--temp-dir={self.temp}",
                ],
                "0",
                [RAY],
            )
            self.wait_nodes(1)
            for _ in range(workers):
                self.add_worker()
        except BaseException:
            self.stop()  # nothing of a failed start stays behind
            raise
        return self

    def add_worker(self) -> None:
        alive = self.alive_nodes()
        self.workers.append(
            self._start([f"--address={self.address}"], "1", [sys.executable, __file__])
        )
        self.wait_nodes(alive + 1)

    def kill_worker(self) -> None:
        """SIGKILL one worker node's whole session: raylet, object store, its workers."""
        proc = self.workers.pop()
        _kill_session(proc)

    def alive_nodes(self) -> int:
        out = subprocess.run(
            [sys.executable, "-c", _COUNT, self.address],
            capture_output=True,
            text=True,
            env={**os.environ, **BASE_ENV, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"},
            timeout=120,
        )
        try:
            return int(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return 0

    def wait_nodes(self, n: int, guard_s: float = 180) -> None:
        end = time.monotonic() + guard_s  # a guard against a hung start, never a timing
        while self.alive_nodes() != n:
            for p in [self.head, *self.workers]:
                assert p is not None and p.poll() is None, self.logs()
            assert time.monotonic() < end, f"{n} Ray nodes never came up:\n{self.logs()}"
            time.sleep(0.5)

    def logs(self) -> str:
        return "\n".join(
            Path(self.temp, f).read_text()[-2000:]
            for f in sorted(os.listdir(self.temp))
            if f.startswith("node-")
        )

    def stop(self) -> None:
        for proc in [*self.workers, self.head]:
            if proc is not None:
                _kill_session(proc)
        self.workers = []
        shutil.rmtree(self.temp, ignore_errors=True)


# counts the alive nodes as a separate driver would see them
_COUNT = """
import sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, logging_level="ERROR")
print(sum(1 for n in ray.nodes() if n["Alive"]))
"""


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def ray_sandbox(cluster: LoopbackCluster) -> tuple[str, ...]:
    """The cluster as the sandbox, for any command that evaluates."""
    return ("--sandbox", "ray", "--ray-address", cluster.address, "--ray-node-sandbox", "local")


def ray_env() -> dict[str, str]:
    """What an `evolve` subprocess needs to drive the loopback cluster."""
    return {"RAY_USAGE_STATS_ENABLED": "0", **AUTH_OFF}


if __name__ == "__main__":  # `ray start` for a worker node that keeps its loopback address
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host
    from ray.scripts.scripts import main

    sys.exit(main())
