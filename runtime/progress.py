"""Progress of long work: rich's bars on a terminal; where output goes to a pipe or a log (a
bar would print nothing there for minutes), a plain line per task every few seconds saying
what is happening, how far it is and how long is left."""
from __future__ import annotations

import itertools
import sys
import threading
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import Progress

EVERY_S = 5.0  # a line at least this often while any task runs


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float = 0.0
    start: float = field(default_factory=time.monotonic)
    said: float = 0.0

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        if not self.total:
            return f"{self.description}: {self.completed:g} done, {elapsed:.0f} s"
        done = min(self.completed / self.total, 1.0)
        left = f", about {elapsed * (1 - done) / done:.0f} s left" if 0 < done < 1 else ""
        return (f"{self.description}: {self.completed:g}/{self.total:g} ({done:.0%}), "
                f"{elapsed:.0f} s{left}")

    @property
    def finished(self) -> bool:
        return bool(self.total) and self.completed >= self.total


class Lines:
    """rich.progress.Progress's add_task / advance / update / console, as plain lines on
    stderr: one when a task starts and when it ends, and one per running task every EVERY_S
    seconds in between (from a timer, so a slow step is not silent)."""

    def __init__(self, every: float | None = None):
        self.console = Console(stderr=True, width=160, highlight=False)
        self.every = every or EVERY_S
        self.tasks: dict[int, _Task] = {}
        self.keys = itertools.count()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.timer = threading.Thread(target=self._tick, daemon=True)

    def __enter__(self) -> "Lines":
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        self.timer.join()

    def add_task(self, description: str, total: float | None = 100.0, **_) -> int:
        with self.lock:
            key = next(self.keys)
            self.tasks[key] = _Task(description, total)
            self._say(self.tasks[key])
        return key

    def advance(self, task: int, advance: float = 1.0) -> None:
        self.update(task, advance=advance)

    def update(self, task: int, *, description: str | None = None, completed: float | None = None,
               total: float | None = None, advance: float | None = None, **_) -> None:
        with self.lock:
            t = self.tasks[task]
            was = t.finished
            t.description = description or t.description
            t.total = t.total if total is None else total
            t.completed = completed if completed is not None else t.completed + (advance or 0)
            if t.finished and not was:
                self._say(t)

    def remove_task(self, task: int) -> None:
        with self.lock:
            self.tasks.pop(task)

    def _say(self, task: _Task) -> None:
        task.said = time.monotonic()
        self.console.print(task.line(), markup=False)

    def _tick(self) -> None:
        while not self.stopped.wait(0.5):
            with self.lock:
                for t in self.tasks.values():
                    if not t.finished and time.monotonic() - t.said >= self.every:
                        self._say(t)


def progress_bar(*columns, **kw) -> Progress | Lines:
    """A rich Progress (with `columns`, `kw`) when its console is a terminal, else Lines."""
    console = kw.get("console") or Console()
    if console.is_terminal:
        return Progress(*columns, **kw)
    return Lines()


SILENCE_S = 10.0  # the longest a piped command may say nothing


class _Watched:
    """A text stream that notes when it was last written to."""

    def __init__(self, stream, beat: "Heartbeat"):
        self.stream, self.beat = stream, beat

    def write(self, text: str) -> int:
        self.beat.last = time.monotonic()
        return self.stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class Heartbeat:
    """Where stderr is not a terminal, a line on stderr after every SILENCE_S seconds in which
    the command printed nothing (a step without a progress bar of its own: a simulation, a
    library's fit), so a log never looks hung."""

    def __init__(self, what: str):
        self.what, self.start = what, time.monotonic()
        self.last = self.start
        self.stopped = threading.Event()

    def install(self) -> None:
        if sys.stderr.isatty():
            return
        self.streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Watched(sys.stdout, self), _Watched(sys.stderr, self)
        threading.Thread(target=self._run, daemon=True).start()

    def stop(self) -> None:
        """Stop beating and give the streams back (a command run in-process ends)."""
        self.stopped.set()
        if isinstance(sys.stdout, _Watched) and sys.stdout.beat is self:
            sys.stdout, sys.stderr = self.streams

    def _run(self) -> None:
        while not self.stopped.wait(1.0):
            now = time.monotonic()
            if now - self.last >= SILENCE_S:
                sys.stderr.write(f"{self.what}: still working, {now - self.start:.0f} s\n")
                sys.stderr.flush()
