"""Sliding windows over a regular stream: a ring buffer, length and hop in seconds."""
from __future__ import annotations

import numpy as np
from pydantic import Field

from edgert.runtime.node import Misconfigured, Node, Params
from edgert.streams import Chunk, StreamInfo


class Window(Node):
    """Emits the last `length` seconds every `hop` seconds; a gap in the stream, or a change
    in its channels, starts afresh."""

    class Params(Params):
        length: float = Field(gt=0, description="window length in seconds")
        hop: float = Field(gt=0, description="seconds between window starts")

    def start(self) -> None:
        self.buf: np.ndarray | None = None

    def check(self, port: str, info: StreamInfo) -> None:
        if info.rate <= 0:
            raise Misconfigured(f"stream {info.name!r} is irregular; a Window needs a nominal "
                                "rate (resample it first)")

    def _reset(self, chunk: Chunk) -> None:
        rate = chunk.info.rate
        self.n = max(1, round(self.p.length * rate))
        self.hop = max(1, round(self.p.hop * rate))
        self.buf = np.zeros((self.n,) + chunk.data.shape[1:], chunk.data.dtype)
        self.stamps = np.zeros(self.n)
        self.pos = 0
        self.due = self.n

    def process(self, inputs: dict[str, Chunk]) -> dict[str, list[Chunk]] | None:
        chunk = inputs["in"]
        if self.buf is None or chunk.gap or chunk.data.shape[1:] != self.buf.shape[1:]:
            self._reset(chunk)
        out = []
        i, total = 0, len(chunk)
        while i < total:
            k = min(total - i, self.due, self.n - self.pos)
            self.buf[self.pos:self.pos + k] = chunk.data[i:i + k]
            self.stamps[self.pos:self.pos + k] = chunk.timestamps[i:i + k]
            self.pos = (self.pos + k) % self.n
            self.due -= k
            i += k
            if self.due == 0:
                out.append(self._window(chunk))
                self.due = self.hop
        return {"out": out} if out else None

    def _window(self, chunk: Chunk) -> Chunk:
        order = np.r_[self.pos:self.n, 0:self.pos]
        window = chunk.derive(self.buf[order], self.stamps[order])
        window.gap = False
        return window
