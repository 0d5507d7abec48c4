"""Align: joins streams of different rates on the timestamps of a reference stream."""
from __future__ import annotations

import numpy as np
from pydantic import Field

from edgert.runtime.node import Node, Params
from edgert.runtime.tracer import Latency
from edgert.streams import Chunk, StreamInfo, local_clock


class Align(Node):
    """For each sample of the first input, takes the latest sample of every other input at or
    before its time (sample-and-hold). A reference chunk waits until every stream has caught up,
    or `max_wait` seconds, then goes out with what is there: a stream that never delivered is
    left out of the channels until it does. Skew per stream is reported."""

    outputs = ("out",)

    class Params(Params):
        inputs: list[str] = Field(min_length=2, description="input ports; the first is the "
                                  "reference whose timestamps the output keeps")
        name: str = "aligned"
        max_wait: float = Field(0.5, ge=0, description="seconds a reference chunk may wait")

    def __init__(self, name: str, params: Params, pipeline: str = ""):
        super().__init__(name, params, pipeline)
        self.inputs = tuple(params.inputs)

    def start(self) -> None:
        self.ref = self.inputs[0]
        self.others = self.inputs[1:]
        self.pending: list[tuple[Chunk, float]] = []
        self.stamps = {p: np.zeros(0) for p in self.others}
        self.data: dict[str, np.ndarray | None] = {p: None for p in self.others}
        self.info: dict[str, StreamInfo] = {}
        self.skew = {p: Latency() for p in self.others}
        self.stale = 0
        self.joined: tuple[str, ...] = ()

    def process(self, inputs: dict[str, Chunk]) -> dict[str, list[Chunk]] | None:
        (port, chunk), = inputs.items()
        self.info[port] = chunk.info
        if port == self.ref:
            self.pending.append((chunk, local_clock()))
        else:
            self._append(port, chunk)
        out = []
        while self.pending and self._ready(*self.pending[0]):
            out.append(self._join(self.pending.pop(0)[0]))
        return {"out": out} if out else None

    def seen(self) -> tuple[str, ...]:
        """The other streams that have delivered data; one that never did is left out."""
        return tuple(p for p in self.others if self.data[p] is not None)

    def _append(self, port: str, chunk: Chunk) -> None:
        old = self.data[port]
        self.data[port] = chunk.data if old is None else np.concatenate([old, chunk.data])
        self.stamps[port] = np.concatenate([self.stamps[port], chunk.timestamps])

    def _ready(self, chunk: Chunk, arrived: float) -> bool:
        covered = all(self.data[p] is not None and self.stamps[p][-1] >= chunk.timestamps[-1]
                      for p in self.others)
        if not covered and local_clock() - arrived >= self.p.max_wait:
            self.stale += 1
            return True
        return covered

    def _join(self, chunk: Chunk) -> Chunk:
        parts, keep = [chunk.data], {}
        for p in self.seen():
            idx = np.searchsorted(self.stamps[p], chunk.timestamps, side="right") - 1
            idx = np.maximum(idx, 0)
            parts.append(self.data[p][idx])
            self.skew[p].extend(np.abs(chunk.timestamps - self.stamps[p][idx]))
            keep[p] = max(int(idx[0]) - 1, 0)
        for p, start in keep.items():
            self.data[p] = self.data[p][start:]
            self.stamps[p] = self.stamps[p][start:]
        data = np.concatenate([np.asarray(x, dtype=np.result_type(*parts)) for x in parts],
                              axis=1)
        out = chunk.derive(data, info=self._joined_info(data.dtype))
        if self.seen() != self.joined:
            out.gap, self.joined = True, self.seen()  # a stream joined: the layout changed
        return out

    def _joined_info(self, dtype: np.dtype) -> StreamInfo:
        ref = self.info[self.ref]
        ports = (self.ref,) + self.seen()
        channels = tuple(f"{p}:{c}" for p in ports for c in self.info[p].channels)
        units = tuple(u for p in ports for u in (self.info[p].units or
                                                 ("",) * self.info[p].n_channels))
        return StreamInfo(name=self.p.name, type=ref.type, channels=channels, units=units,
                          rate=ref.rate, dtype=str(dtype))

    def stats(self) -> dict:
        skew = {p: {k: v for k, v in lat.summary().items() if k in ("p50_ms", "max_ms")}
                for p, lat in self.skew.items()}
        return {"skew": skew, "stale": self.stale}
