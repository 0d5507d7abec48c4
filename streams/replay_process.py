"""A Replay in a child process: simulated sensors beside the pipeline, not inside it.

Real sensors are other programs. A replay thread in the pipeline's own interpreter competes
with it for the GIL: with the car demo's four streams in-process, the pipeline's stage 1
waited on the replay's pushes and the end-to-end tail grew by several milliseconds. The child
is spawned (not forked: liblsl's threads do not survive a fork) and driven over a pipe;
`open`, `ready`, `start`, `wait` and `stop` behave as `Replay`'s do.
"""
from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence

from edgert.streams.replay import Replay
from edgert.streams.xdf_read import Recording

START_TIMEOUT = 60.0


def _serve(recordings: list[Recording], options: dict, conn) -> None:
    """The child: a Replay answering the parent's commands until `stop`."""
    replay = Replay(recordings, **options)
    try:
        replay.open()
        conn.send(("open", None))
        while True:
            command, arg = conn.recv()
            if command == "ready":
                conn.send(("ready", replay.ready(arg)))
            elif command == "start":
                replay.start()
                conn.send(("start", replay.t_start))
            elif command == "wait":
                conn.send(("wait", (replay.wait(arg), replay.pushed)))
            else:
                break
    except BaseException as e:  # the parent re-raises it, named
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        replay.stop()
        conn.send(("stopped", replay.pushed))


class ReplayProcess:
    """`Replay(recordings, **options)` run in its own process."""

    def __init__(self, recordings: Sequence[Recording], **options):
        Replay(recordings, **options)  # bad recordings or options fail here, in the caller
        self.names = [r.info.name for r in recordings]
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_serve, args=(list(recordings), options, child),
                                    name="edgert-replay", daemon=True)
        self.t_start: float | None = None
        self.pushed = {name: 0 for name in self.names}
        self._opened = False

    def _ask(self, command: str, arg=None, timeout: float | None = START_TIMEOUT):
        self._conn.send((command, arg))
        return self._answer(command, timeout)

    def _answer(self, expected: str, timeout: float | None):
        if not self._conn.poll(timeout):
            raise TimeoutError(f"replay of {self.names}: no answer to {expected!r} in "
                               f"{timeout} s; its process is "
                               f"{'alive' if self._process.is_alive() else 'gone'}")
        kind, value = self._conn.recv()
        if kind == "error":
            raise RuntimeError(f"replay of {self.names} failed in its process: {value}")
        return value

    def open(self) -> None:
        """Start the process; returns once its outlets exist."""
        if not self._opened:
            self._process.start()
            self._answer("open", START_TIMEOUT)
            self._opened = True

    def ready(self, timeout: float) -> bool:
        self.open()
        return self._ask("ready", timeout, timeout * len(self.names) + START_TIMEOUT)

    def start(self) -> "ReplayProcess":
        self.open()
        self.t_start = self._ask("start")
        return self

    def wait(self, timeout: float | None = None) -> bool:
        done, self.pushed = self._ask("wait", timeout, None)
        return done

    def stop(self) -> None:
        """Stop pushing, close the outlets and end the process; `pushed` is then final."""
        if not self._opened or not self._process.is_alive():
            return
        self._conn.send(("stop", None))
        while self._conn.poll(START_TIMEOUT):
            kind, value = self._conn.recv()
            if kind == "stopped":
                self.pushed = value
                break
        self._process.join(START_TIMEOUT)
