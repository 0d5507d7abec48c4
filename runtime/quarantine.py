"""Quarantine: bad chunks are set aside and counted, logged once per kind; the pipeline runs on."""
from __future__ import annotations

import logging
from collections import Counter, deque

import numpy as np

from edgert.streams import STRING, Chunk

log = logging.getLogger(__name__)


def _dtype_kind(dtype: str) -> np.dtype:
    return np.dtype(object) if dtype == STRING else np.dtype(dtype)


def problem(chunk: Chunk, expected: tuple | None) -> tuple[str, str] | None:
    """(kind, message) for a chunk that is malformed or differs from `expected` (dtype, shape)."""
    data = chunk.data
    if not isinstance(data, np.ndarray) or data.ndim < 1:
        return "shape", f"data is {type(data).__name__}, not an array with samples first"
    if len(chunk.timestamps) != data.shape[0]:
        return "timestamps", (f"{data.shape[0]} samples but {len(chunk.timestamps)} "
                              "timestamps (one per sample expected)")
    if data.ndim == 2 and chunk.info.channels and data.shape[1] != chunk.info.n_channels:
        return "channels", (f"{data.shape[1]} channels, stream declares "
                            f"{chunk.info.n_channels}")
    if data.dtype != _dtype_kind(chunk.info.dtype):
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


class Quarantine:
    """Checks each chunk before a node sees it; keeps the last `keep` bad chunks for inspection."""

    def __init__(self, keep: int = 100):
        self.expected: dict[tuple[str, str], tuple] = {}
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[tuple[str, str]] = Counter()
        self.kept: deque[tuple[str, str, str, Chunk]] = deque(maxlen=keep)

    def check(self, node: str, port: str, chunk: Chunk, allow_nonfinite: bool) -> bool:
        """True if the chunk may go to `node`; otherwise it is quarantined here."""
        key = (node, port)
        # after a gap (a reconnect, a new set of joined streams) the layout may change
        found = problem(chunk, None if chunk.gap else self.expected.get(key))
        if found is None and not allow_nonfinite and nonfinite(chunk):
            found = "nonfinite", "NaN or Inf in the data"
        if found is not None:
            self.add(node, port, chunk, *found)
            return False
        if chunk.gap or key not in self.expected:
            self.expected[key] = (chunk.data.dtype, chunk.data.shape[1:])
        return True

    def add(self, node: str, port: str, chunk: Chunk, kind: str, message: str) -> None:
        self.counts[node] += 1
        self.kinds[(node, kind)] += 1
        self.kept.append((node, port, kind, chunk))
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
