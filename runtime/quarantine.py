"""Quarantine: bad chunks are set aside and counted, logged once per kind; the pipeline runs on.

What is kept for inspection is bounded in bytes, not only in count: a kept chunk is a copy of
at most `KEEP_BYTES` of its data, so a bad frame never pins the receive buffer it came in.
The layout a node input expects is learnt per stream, so one stream's chunks (or a stranger's
frame) never change what another stream on the same input is held to.
"""
from __future__ import annotations

import logging
from collections import Counter, OrderedDict, deque

import numpy as np

from edgert.streams import STRING, Chunk

log = logging.getLogger(__name__)
KEEP_BYTES = 64 << 10  # of each kept chunk's data
MAX_STREAMS = 1024  # layouts remembered per quarantine; the least recently seen goes first


def _dtype_kind(dtype: str) -> np.dtype | None:
    if dtype == STRING:
        return np.dtype(object)
    try:
        return np.dtype(dtype)
    except TypeError:
        return None


def problem(chunk: Chunk, expected: tuple | None) -> tuple[str, str] | None:
    """(kind, message) for a chunk that is malformed or differs from `expected` (dtype, shape)."""
    data, stamps = chunk.data, chunk.timestamps
    if not isinstance(data, np.ndarray) or data.ndim < 1:
        return "shape", f"data is {type(data).__name__}, not an array with samples first"
    if len(stamps) != data.shape[0]:
        return "timestamps", (f"{data.shape[0]} samples but {len(stamps)} "
                              "timestamps (one per sample expected)")
    if len(stamps) and not np.isfinite(stamps).all():
        return "timestamps", "NaN or Inf among the timestamps"
    if data.ndim == 2 and chunk.info.channels and data.shape[1] != chunk.info.n_channels:
        return "channels", (f"{data.shape[1]} channels, stream declares "
                            f"{chunk.info.n_channels}")
    declared = _dtype_kind(chunk.info.dtype)
    if declared is None:
        return "dtype", f"stream declares {chunk.info.dtype!r}, which is not a dtype"
    if data.dtype != declared:
        return "dtype", f"dtype {data.dtype}, stream declares {chunk.info.dtype}"
    if expected is not None:
        dtype, shape = expected
        if data.dtype != dtype:
            return "dtype", f"dtype {data.dtype}, earlier chunks were {dtype}"
        if data.shape[1:2] != shape[:1]:
            return "channels", f"{data.shape[1:2]} channels, earlier chunks had {shape[:1]}"
        if data.shape[1:] != shape:
            return "shape", f"sample shape {data.shape[1:]}, earlier chunks had {shape}"
    return None


def nonfinite(chunk: Chunk) -> bool:
    data = chunk.data
    return data.dtype.kind in "fc" and not np.isfinite(data).all()


def sample(chunk: Chunk) -> Chunk:
    """A copy of the chunk's first samples, at most KEEP_BYTES of data: what is kept of it."""
    data = chunk.data
    if not isinstance(data, np.ndarray) or data.ndim < 1:
        return Chunk(np.zeros(0), np.zeros(0), chunk.info, chunk.seq, gap=chunk.gap)
    per_sample = max(1, data[:1].nbytes)
    n = min(data.shape[0], max(1, KEEP_BYTES // per_sample)) if per_sample <= KEEP_BYTES else 0
    return Chunk(data[:n].copy(), np.array(chunk.timestamps[:n], dtype=np.float64),
                 chunk.info, chunk.seq, list(chunk.trace[-8:]), chunk.gap)


class Quarantine:
    """Checks each chunk before a node sees it; keeps samples of the last `keep` bad chunks."""

    def __init__(self, keep: int = 100):
        self.expected: OrderedDict[tuple, tuple] = OrderedDict()
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[tuple[str, str]] = Counter()
        self.kept: deque[tuple[str, str, str, Chunk]] = deque(maxlen=keep)

    def check(self, node: str, port: str, chunk: Chunk, allow_nonfinite: bool) -> bool:
        """True if the chunk may go to `node`; otherwise it is quarantined here."""
        key = (node, port, chunk.info)
        # after a gap (a reconnect, a new set of joined streams) the layout may change
        found = problem(chunk, None if chunk.gap else self.expected.get(key))
        if found is None and not allow_nonfinite and nonfinite(chunk):
            found = "nonfinite", "NaN or Inf in the data"
        if found is not None:
            self.add(node, port, chunk, *found)
            return False
        if chunk.gap or key not in self.expected:
            self.expected[key] = (chunk.data.dtype, chunk.data.shape[1:])
            if len(self.expected) > MAX_STREAMS:
                self.expected.popitem(last=False)
        self.expected.move_to_end(key)
        return True

    def add(self, node: str, port: str, chunk: Chunk, kind: str, message: str) -> None:
        self.counts[node] += 1
        self.kinds[(node, kind)] += 1
        self.kept.append((node, port, kind, sample(chunk)))
        if self.kinds[(node, kind)] == 1:
            log.warning("node %r quarantined a chunk of stream %r on input %r (%s): %s; "
                        "further %s chunks are counted, not logged", node, chunk.info.name,
                        port, kind, message, kind)

    def reject(self, node: str, kind: str, message: str) -> None:
        """Count what a source refused before it became a chunk (a malformed message): one
        count, as for a quarantined chunk, in the node's total and by kind."""
        self.counts[node] += 1
        self.kinds[(node, kind)] += 1
        if self.kinds[(node, kind)] == 1:
            log.warning("node %r rejected a message (%s): %s; further %s messages are counted, "
                        "not logged", node, kind, message, kind)

    def by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (node, kind), n in self.kinds.items():
            out.setdefault(node, {})[kind] = n
        return out
