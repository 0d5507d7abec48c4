"""Nodes for load generation: a source that issues prepared queries at scheduled times, and a
sink that records when each one finished.

A query's timestamps end at the time it was *due*, not when it left, so the pipeline's
latency counts the wait behind earlier queries, as MLPerf LoadGen counts it.
"""
from __future__ import annotations

import threading
import time

import numpy as np
from pydantic import Field

from edgert.runtime.node import Node, Params, Source
from edgert.streams import Chunk, StreamInfo, local_clock


class Feed(Source):
    """Issues `windows` (samples x channels, cycled) at `due` seconds after the first read,
    or, without `due`, each as soon as the pipeline asks (one query in flight), for `seconds`.
    Queries due before `seconds` but late still leave up to `grace` seconds after it.
    """

    class Params(Params):
        windows: list[np.ndarray] = Field(min_length=1, description="query payloads, "
                                          "samples first")
        info: StreamInfo
        due: list[float] | None = Field(None, description="issue times, s after start")
        seconds: float = Field(gt=0, description="length of the plan")
        grace: float = Field(0.2, ge=0, description="s to keep issuing late queries")

    def start(self) -> None:
        rate = self.p.info.rate
        n = len(self.p.windows[0])
        self.offsets = (np.arange(n)[::-1] / rate) if rate > 0 else np.zeros(n)
        self.t0: float | None = None
        self.issued = 0
        self.finished = threading.Event()

    def read(self, timeout: float) -> Chunk | None:
        if self.t0 is None:
            self.t0 = local_clock()
        due = self._due()
        if due is None:
            self.finished.set()
            time.sleep(timeout)
            return None
        wait = due - local_clock()
        if wait > timeout:
            time.sleep(timeout)
            return None
        if wait > 0:
            time.sleep(wait)
        return self._query(due)

    def _due(self) -> float | None:
        """When the next query is due; None once the plan or the run time is used up."""
        now = local_clock()
        elapsed = now - self.t0
        if self.p.due is None:
            return now if elapsed < self.p.seconds else None
        if (self.issued >= len(self.p.due) or self.p.due[self.issued] >= self.p.seconds
                or elapsed >= self.p.seconds + self.p.grace):
            return None
        return self.t0 + self.p.due[self.issued]

    def _query(self, due: float) -> Chunk:
        window = self.p.windows[self.issued % len(self.p.windows)]
        chunk = Chunk(data=window, timestamps=due - self.offsets, info=self.p.info,
                      seq=self.issued)
        self.issued += 1
        return chunk


class Record(Node):
    """Keeps (query, due, finished) for every result: the raw material of every figure."""

    outputs = ()

    def start(self) -> None:
        self.rows: list[tuple[int, float, float]] = []

    def process(self, inputs: dict[str, Chunk]) -> None:
        chunk = inputs["in"]
        self.rows.append((chunk.seq, float(chunk.timestamps[-1]), local_clock()))


def query_info(channels: tuple[str, ...], rate: float) -> StreamInfo:
    return StreamInfo(name="queries", type="EEG", channels=channels,
                      units=("uV",) * len(channels), rate=rate)
