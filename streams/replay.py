"""Replay: the one way recorded or generated data becomes a live stream.

Every stream of a recording is pushed through its own sink (an LSL outlet by default, or
anything with `push(chunk)`), merged in time order by one thread. Timestamps are rewritten
to the push-time clock, keeping the original spacing (divided by `speed`). Clock resets and
holes longer than `max_gap` are cut to one sample period and flagged with `gap=True`.
Chunk boundaries depend only on the data, `chunk_size`, `jitter` and `seed`, so two replays
with the same arguments push the same chunks.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from edgert.streams.chunk import STRING, Chunk, StreamInfo
from edgert.streams.clock import local_clock
from edgert.streams.lsl import Outlet
from edgert.streams.xdf_read import Recording, read_xdf

log = logging.getLogger(__name__)

# Cut length for gaps when no stream has a nominal rate (marker-only recordings).
IRREGULAR_PERIOD = 1e-3


@dataclass(frozen=True)
class Timeline:
    """Where each sample of each stream falls in play time (seconds from the first sample)."""

    play: list[np.ndarray]
    gaps: list[np.ndarray]
    period: float

    @property
    def duration(self) -> float:
        ends = [p[-1] for p in self.play if len(p)]
        return max(ends, default=0.0)


def timeline(recordings: Sequence[Recording], max_gap: float) -> Timeline:
    """Play times for all streams on one axis, so streams stay aligned through cuts.

    A backwards jump in a stream (clock reset) starts a new epoch; epochs are laid end to
    end, one period apart, assuming all streams of the recording reset together. Holes
    longer than `max_gap` in which no regular stream has a sample are cut to one period;
    irregular samples inside such a hole are squeezed into it, keeping their order.
    """
    rates = [r.info.rate for r in recordings if r.info.rate > 0 and len(r)]
    period = 1.0 / max(rates) if rates else IRREGULAR_PERIOD
    epochs = [_epochs(r.timestamps) for r in recordings]
    unwrapped = _unwrap(recordings, epochs, period)
    regular = [u for u, r in zip(unwrapped, recordings) if r.info.rate > 0]
    starts, ends = _holes(regular, max_gap)
    play, gaps = [], []
    for u, epoch in zip(unwrapped, epochs):
        p = _squeeze(u, starts, ends, period)
        cut = u - p
        gap = np.zeros(len(u), dtype=bool)
        gap[1:] = (np.diff(epoch) > 0) | (np.diff(cut) > 1e-9)
        play.append(p)
        gaps.append(gap)
    return Timeline(play=play, gaps=gaps, period=period)


def _epochs(stamps: np.ndarray) -> np.ndarray:
    """0 for each sample up to the first backwards jump, then 1, and so on."""
    return np.concatenate([[0], np.cumsum(np.diff(stamps) < 0)])[:len(stamps)].astype(int)


def _unwrap(recordings: Sequence[Recording], epochs: list[np.ndarray],
            period: float) -> list[np.ndarray]:
    """Timestamps made monotonic across epochs and shifted so the first sample is at 0."""
    count = max((int(e[-1]) + 1 for e in epochs if len(e)), default=0)
    shifts = np.zeros(count)
    previous_end = None
    for k in range(count):
        stamps = np.concatenate([r.timestamps[e == k] for r, e in zip(recordings, epochs)])
        start = stamps.min()
        shifts[k] = -start if previous_end is None else previous_end + period - start
        previous_end = stamps.max() + shifts[k]
    return [r.timestamps + shifts[e] for r, e in zip(recordings, epochs)]


def _holes(regular: list[np.ndarray], max_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every stretch over max_gap without a sample of any regular stream."""
    stamps = np.unique(np.concatenate(regular)) if regular else np.zeros(0)
    wide = np.flatnonzero(np.diff(stamps) > max_gap)
    return stamps[wide], stamps[wide + 1]


def _squeeze(u: np.ndarray, starts: np.ndarray, ends: np.ndarray,
             period: float) -> np.ndarray:
    """Each hole (start, end) shortened to `period`; points inside it scaled into it."""
    p = u.astype(np.float64)
    for start, end in zip(starts, ends):
        cut = (end - start) - period
        p -= np.where(u >= end, cut, 0.0)
        inside = (u > start) & (u < end)
        p[inside] -= (u[inside] - start) * cut / (end - start)
    return p


def chunk_bounds(gaps: np.ndarray, size: int, rng: np.random.Generator | None
                 ) -> list[tuple[int, int]]:
    """[start, stop) of each chunk: `size` samples (random 1..2*size-1 with an rng), never
    spanning a gap, so a chunk flagged `gap` has the discontinuity before its first sample."""
    edges = np.concatenate([[0], np.flatnonzero(gaps[1:]) + 1, [len(gaps)]])
    bounds = []
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
        start = lo
        while start < hi:
            step = size if rng is None else int(rng.integers(1, 2 * size))
            bounds.append((start, min(start + step, hi)))
            start += step
    return bounds


@dataclass(frozen=True, order=True)
class Push:
    """One chunk to push: samples [start, stop) of a stream, due `due` s into the replay."""

    due: float
    stream: int
    lap: int
    start: int
    stop: int
    gap: bool


class Replay:
    """Plays recordings as live streams through sinks made by `make_sink(info)`.

    Regular numeric streams go out in chunks of `chunk_size` samples (seeded random sizes
    with `jitter`); string and irregular streams sample by sample. A chunk leaves when its
    last sample is due. `speed` > 1 plays faster; `speed=inf` pushes as fast as possible,
    with timestamps spaced as recorded and ending at the moment the lap started: the recording
    reads as one that just ended, so no timestamp is ever ahead of the clock (a consumer's
    latency is then time since the data's stamp, as live). `loop` repeats the recording,
    flagging the first chunk of each lap with `gap=True`; at `speed=inf` each lap is stamped
    so from its own start.
    """

    def __init__(self, recordings: Sequence[Recording],
                 make_sink: Callable[[StreamInfo], object] = Outlet, speed: float = 1.0,
                 chunk_size: int = 16, loop: bool = False, seed: int = 0,
                 jitter: bool = False, max_gap: float = 1.0):
        if not speed > 0:
            raise ValueError(f"replay speed must be > 0 (inf for as fast as possible), "
                             f"got {speed}")
        if chunk_size < 1:
            raise ValueError(f"replay chunk_size must be >= 1 sample, got {chunk_size}")
        self.recordings = [_checked(r) for r in recordings]
        names = [r.info.name for r in self.recordings]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"replay: streams {duplicates} appear more than once; rename "
                             f"them (their sinks would collide)")
        self.make_sink = make_sink
        self.speed = speed
        self.chunk_size = chunk_size
        self.loop = loop
        self.seed = seed
        self.jitter = jitter
        self.timeline = timeline(self.recordings, max_gap)
        self.lap_seconds = float(self.timeline.duration + self.timeline.period)
        self.pushed = {name: 0 for name in names}
        self._seqs = [0] * len(names)
        self.sinks: list | None = None
        self.t_start: float | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    @classmethod
    def from_xdf(cls, path: str | os.PathLike, sync: bool = True,
                 names: Sequence[str] | None = None, **kw) -> "Replay":
        """Replay the streams of an XDF file (only those in `names`, when given)."""
        recordings = read_xdf(path, sync=sync)
        if names is not None:
            missing = sorted(set(names) - {r.info.name for r in recordings})
            if missing:
                raise ValueError(f"{path}: no streams named {missing}; it holds "
                                 f"{[r.info.name for r in recordings]}")
            recordings = [r for r in recordings if r.info.name in names]
        return cls(recordings, **kw)

    @classmethod
    def from_arrays(cls, info: StreamInfo, data: np.ndarray,
                    timestamps: np.ndarray | None = None, rate: float | None = None,
                    **kw) -> "Replay":
        """Replay in-memory samples (samples first); without timestamps they are spaced
        1/rate apart, `rate` defaulting to the info's nominal rate."""
        data = np.asarray(data)
        if timestamps is None:
            rate = info.rate if rate is None else rate
            if not rate > 0:
                raise ValueError(f"stream {info.name!r}: give timestamps or a rate > 0 to "
                                 f"space its {len(data)} samples")
            timestamps = np.arange(len(data)) / rate
        return cls([Recording(info, data, np.asarray(timestamps, dtype=np.float64))], **kw)

    def open(self) -> list:
        """Create the sinks (before start, so consumers can connect and miss nothing)."""
        if self.sinks is None:
            self.sinks = [self.make_sink(r.info) for r in self.recordings]
        return self.sinks

    def ready(self, timeout: float) -> bool:
        """Every sink has a consumer (sinks that cannot tell count as ready)."""
        return all(sink.wait_for_consumers(timeout) for sink in self.open()
                   if hasattr(sink, "wait_for_consumers"))

    def start(self) -> "Replay":
        if self._thread is not None:
            raise RuntimeError("this replay was already started; make a new Replay")
        self.open()
        self.t_start = local_clock() - (self.lap_seconds if math.isinf(self.speed) else 0.0)
        self._laps = {0: self.t_start}  # speed=inf: each lap's stamp origin
        self._thread = threading.Thread(target=self._run, name="replay", daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """True once everything was pushed (never, with loop, until stop); raises a sink's
        error."""
        if self._thread is None:
            raise RuntimeError("replay not started; call start() first")
        self._thread.join(timeout)
        if self.error is not None:
            raise self.error
        return not self._thread.is_alive()

    join = wait

    def elapsed(self) -> float:
        """Seconds since start (0 before)."""
        return 0.0 if self.t_start is None else local_clock() - self.t_start

    @property
    def done(self) -> bool:
        return self._thread is not None and not self._thread.is_alive()

    def stop(self) -> None:
        """Stop pushing and close the sinks (once; they stay in `sinks` for inspection)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._closed:
            return
        self._closed = True
        for sink in self.sinks or []:
            close = getattr(sink, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> "Replay":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def schedule(self) -> Iterator[Push]:
        """Every push in order: per-stream plans merged by due time (then stream, lap)."""
        plans = [self._plan(i) for i in range(len(self.recordings))]
        return heapq.merge(*plans)

    def _plan(self, i: int) -> Iterator[Push]:
        recording = self.recordings[i]
        if not len(recording):
            return
        play, gaps = self.timeline.play[i], self.timeline.gaps[i]
        one_by_one = recording.info.dtype == STRING or recording.info.irregular
        size = 1 if one_by_one else self.chunk_size
        rng = np.random.default_rng([self.seed, i]) if self.jitter and not one_by_one else None
        for lap in itertools.count() if self.loop else range(1):
            offset = lap * self.lap_seconds
            for start, stop in chunk_bounds(gaps, size, rng):
                yield Push(offset + float(play[stop - 1]), i, lap, start, stop,
                           bool(gaps[start]) or (lap > 0 and start == 0))

    def _run(self) -> None:
        try:
            for push in self.schedule():
                if self._wait_until(push.due):
                    return
                self._push(push)
        except BaseException as e:
            log.exception("replay stopped by an error")
            self.error = e

    def _wait_until(self, due: float) -> bool:
        """Sleep until the push is due; True if stop() came first."""
        if math.isinf(self.speed):
            return self._stop.is_set()
        delay = self.t_start + due / self.speed - local_clock()
        return self._stop.wait(delay) if delay > 0 else self._stop.is_set()

    def _push(self, push: Push) -> None:
        recording = self.recordings[push.stream]
        rows = slice(push.start, push.stop)
        play = self.timeline.play[push.stream][rows]
        if math.isinf(self.speed):
            if push.lap not in self._laps:
                self._laps[push.lap] = local_clock() - self.lap_seconds
            stamps = self._laps[push.lap] + play
        else:
            stamps = self.t_start + (play + push.lap * self.lap_seconds) / self.speed
        chunk = Chunk(data=recording.data[rows].copy(), timestamps=stamps,
                      info=recording.info, seq=self._seqs[push.stream], gap=push.gap)
        chunk.trace.append(("replay", float(stamps[-1]), local_clock()))
        self.sinks[push.stream].push(chunk)
        self._seqs[push.stream] += 1
        self.pushed[recording.info.name] += push.stop - push.start


def _checked(recording: Recording) -> Recording:
    """The recording with 2-D data of the declared dtype, or an error naming the stream."""
    info = recording.info
    width = max(info.n_channels, 1)
    data = np.asarray(recording.data, dtype=object if info.dtype == STRING else info.dtype)
    if data.ndim == 1:
        data = data.reshape(-1, 1)
    stamps = np.asarray(recording.timestamps, dtype=np.float64)
    if data.shape != (len(stamps), width):
        raise ValueError(f"stream {info.name!r}: data of shape {np.shape(recording.data)} does "
                         f"not fit {len(stamps)} timestamps x {width} channels")
    return Recording(info, data, stamps, recording.clock_offsets)
