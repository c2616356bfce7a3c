"""Ctrl-C and SIGTERM for `evolve run` and `evolve resume`: the first stops the run
cleanly, the second at once; either way `evolve resume` continues it.

Installed first thing by the command, whatever this process inherited: a shell runs a
background job (`evolve run ... &` in a script, a test suite started that way) with
SIGINT ignored, and asyncio only takes over SIGINT from Python's default handler, so
without this a Ctrl-C or `kill -INT` would be dropped and the run would go on to its end.

The signals are counted by a watcher thread that reads them from the interpreter's
wakeup descriptor, so a signal counts at once even while the main thread is busy (a
blocking call, a cleanup), and whichever thread the kernel gave it to:

- first, while the run's event loop runs: its main task is cancelled; the controller
  kills what is in flight and leaves unfinished candidates pending for `resume`;
- first, before or after the loop (setup, teardown): KeyboardInterrupt in the main
  thread, and the request is remembered, so one that some library swallowed still stops
  the run as soon as its loop starts;
- second: the run's cleanups (the sandbox kills its evaluations) get a few seconds in
  their own thread, the run's row is left `stopped`, and the process exits (130) without
  waiting for anything else. What a kill -9 would leave is left: resume continues from
  the archive's last committed write;
- third: exit at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from evolve.archive import RunStatus

SIGNALS = (signal.SIGINT, signal.SIGTERM)
FORCE_CLEANUP_S = 5.0  # the most the second signal waits for the cleanups
EXIT_CODE = 130


class StopSignals:
    """The stop requests of one command (see the module's docstring)."""

    def __init__(self) -> None:
        self.count = 0  # SIGINT/SIGTERM received (the watcher's count)
        self.requested = False  # set in the main thread's handler, before anything else
        self._lock = threading.Lock()
        self._target: tuple[asyncio.AbstractEventLoop, asyncio.Task] | None = None
        self._cleanups: list[Callable[[], object]] = []
        self._run: tuple[Path, str] | None = None
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)  # the interpreter's wakeup fd must not block
        self._previous: dict[int, object] = {}
        self._previous_wakeup = -1
        self._installed = False

    # ---- installing ----------------------------------------------------------
    def install(self) -> None:
        """Take SIGINT and SIGTERM (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            return
        if not self._installed:
            for sig in SIGNALS:
                self._previous[sig] = signal.getsignal(sig)
            self._previous_wakeup = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
            threading.Thread(target=self._watch, name="evolve-stop", daemon=True).start()
            self._installed = True
        self.reassert()

    def reassert(self) -> None:
        """Take the signals back from a library that replaced the handlers (Ray's init sets
        its own SIGTERM handler) or the wakeup descriptor."""
        if not self._installed:
            return
        for sig in SIGNALS:
            if signal.getsignal(sig) != self._on_signal:
                signal.signal(sig, self._on_signal)
        current = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        if current not in (-1, self._write_fd):
            self._previous_wakeup = current

    def uninstall(self) -> None:
        if self._installed:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
            signal.set_wakeup_fd(self._previous_wakeup)
            self._installed = False
            with contextlib.suppress(OSError):
                os.write(self._write_fd, b"\0")  # ends the watcher, which closes its end
        else:
            os.close(self._read_fd)
        os.close(self._write_fd)
        self._target = None

    # ---- what a stop reaches ------------------------------------------------
    def on_force(self, cleanup: Callable[[], object]) -> None:
        """Run `cleanup` (in another thread, for FORCE_CLEANUP_S at most) on a forced stop."""
        self._cleanups.append(cleanup)

    def for_run(self, archive_path: Path, run_id: str) -> None:
        """The run a forced stop leaves `stopped` (through its own connection)."""
        self._run = (archive_path, run_id)

    @contextlib.contextmanager
    def running(self, task: asyncio.Task) -> Iterator[None]:
        """While the block runs, a first signal cancels `task` (the loop's main task); a
        signal that came earlier cancels it at once."""
        loop = task.get_loop()
        self.reassert()
        with self._lock:
            self._target = (loop, task)
            early = self.requested or self.count > 0
        if early:
            task.cancel()
        try:
            yield
        finally:
            with self._lock:
                self._target = None

    # ---- the handlers ----------------------------------------------------------
    def _on_signal(self, signum: int, frame: object) -> None:
        """Python's handler, in the main thread between two bytecodes: remembers, and for
        the first signal outside the loop raises KeyboardInterrupt. The watcher does the
        rest (a later signal never interrupts the stop the first one began)."""
        first = not self.requested
        self.requested = True
        if first and self._target is None:
            raise KeyboardInterrupt

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except InterruptedError:
                continue
            except OSError:
                return
            for sig in data:
                if sig == 0:
                    os.close(self._read_fd)
                    return
                if sig in SIGNALS:
                    self._count(sig)

    def _count(self, sig: int) -> None:
        with self._lock:
            self.count += 1
            n, target = self.count, self._target
        if n == 1:
            if target is not None:  # else the main thread has its KeyboardInterrupt
                loop, task = target
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(task.cancel)
                _say(
                    f"evolve: {signal.Signals(sig).name}: stopping cleanly "
                    "(what is in flight stays pending for `evolve resume`); "
                    "a second Ctrl-C stops at once"
                )
        elif n == 2:
            threading.Thread(target=self._force, name="evolve-force-stop", daemon=True).start()
        else:
            os._exit(EXIT_CODE)

    def _force(self) -> None:
        _say("evolve: stopping at once")
        done = threading.Event()

        def clean() -> None:
            for fn in reversed(self._cleanups):
                with contextlib.suppress(BaseException):
                    fn()
            done.set()

        threading.Thread(target=clean, name="evolve-force-cleanup", daemon=True).start()
        done.wait(FORCE_CLEANUP_S)
        if self._run is not None:
            settle_stopped(*self._run)
        how = f"`evolve resume {self._run[1]}` continues the run" if self._run else "stopped"
        _say(f"interrupted: {how}")
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
        os._exit(EXIT_CODE)


def settle_stopped(archive_path: Path, run_id: str, timeout_s: float = 2.0) -> None:
    """Leave the run `stopped` if this process still has it `running`; best effort, on a
    connection of its own (the main thread's may be in the middle of a write: then the row
    stays `running`, and `evolve runs` shows it interrupted, its owner gone)."""
    try:
        db = sqlite3.connect(archive_path, timeout=timeout_s, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        db.execute(
            "UPDATE runs SET status=?, stop_reason='interrupted', updated_at=?"
            " WHERE run_id=? AND status=? AND owner_pid=? AND owner_host=?",
            (
                RunStatus.STOPPED,
                time.time(),
                run_id,
                RunStatus.RUNNING,
                os.getpid(),
                socket.gethostname(),
            ),
        )
    except sqlite3.Error:
        pass
    finally:
        db.close()


def _say(line: str) -> None:
    """To stderr without Python's buffered writer (which the main thread may hold)."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


_current: StopSignals | None = None


def current() -> StopSignals | None:
    """The StopSignals of the command being run, if it installed one."""
    return _current


@contextlib.contextmanager
def installed() -> Iterator[StopSignals]:
    """A StopSignals for the block, its handlers in place from its first line."""
    global _current
    stop, previous = StopSignals(), _current
    stop.install()
    _current = stop
    try:
        yield stop
    finally:
        _current = previous
        stop.uninstall()


def running(task: asyncio.Task) -> contextlib.AbstractContextManager[None]:
    """StopSignals.running for the current command's signals (nothing without one)."""
    return _current.running(task) if _current is not None else contextlib.nullcontext()
