"""Streaming resampling: anti-alias low-pass (when slowing down), then linear interpolation."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from pydantic import Field
from scipy import signal

from edgert.runtime.node import Misconfigured, Node, Params
from edgert.streams import Chunk, StreamInfo


class Resample(Node):
    """Converts a regular stream to `rate` Hz, carrying filter state and phase across chunks.

    Output samples sit at fixed fractional positions of the input, so the result does not
    depend on how the input was chunked.
    """

    class Params(Params):
        rate: float = Field(gt=0, description="output rate in Hz")
        order: int = Field(8, gt=0, le=12, description="anti-alias low-pass order")

    def start(self) -> None:
        self.step: float | None = None

    def check(self, port: str, info: StreamInfo) -> None:
        if info.rate <= 0:
            raise Misconfigured(f"stream {info.name!r} is irregular; Resample needs a nominal "
                                "input rate")

    def _reset(self, chunk: Chunk) -> None:
        rate = chunk.info.rate
        self.step = rate / self.p.rate
        self.sos = (signal.butter(self.p.order, 0.45 * self.p.rate, fs=rate, output="sos")
                    if self.p.rate < rate else None)
        self.zi = (signal.sosfilt_zi(self.sos)[:, :, None] * chunk.data[:1].astype(float)
                   if self.sos is not None else None)
        self.next = 0.0
        self.last: tuple[np.ndarray, float] | None = None
        self.info = replace(chunk.info, rate=self.p.rate)

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk] | None:
        chunk = inputs["in"]
        if self.step is None or chunk.gap:
            self._reset(chunk)
        x = chunk.data.astype(float)
        if self.sos is not None:
            x, self.zi = signal.sosfilt(self.sos, x, axis=0, zi=self.zi)
        t = chunk.timestamps
        if self.last is not None:
            x = np.concatenate([self.last[0][None], x])
            t = np.concatenate([[self.last[1]], t])
        positions = np.arange(self.next, len(x) - 1 + 1e-9, self.step)
        self.last = (x[-1], t[-1])
        self.next = (positions[-1] + self.step if len(positions) else self.next) - (len(x) - 1)
        if len(positions) == 0:
            return None
        i = np.minimum(positions.astype(int), len(x) - 2) if len(x) > 1 else np.zeros(
            len(positions), int)
        frac = positions - i
        if len(x) > 1:
            y = x[i] * (1 - frac)[:, None] + x[i + 1] * frac[:, None]
            stamps = t[i] * (1 - frac) + t[i + 1] * frac
        else:
            y, stamps = x[i], t[i]
        out = chunk.derive(y.astype(chunk.data.dtype, copy=False), stamps, self.info)
        return {"out": out}
