"""Causal IIR filtering with state carried across chunks (scipy.signal second-order sections)."""
from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator, model_validator
from scipy import signal

from edgert.runtime.node import Misconfigured, Node, Params
from edgert.streams import Chunk, StreamInfo


class Filter(Node):
    """Butterworth band/low/high-pass or band-stop, or a notch; state restarts after a gap."""

    class Params(Params):
        kind: Literal["bandpass", "lowpass", "highpass", "bandstop", "notch"] = "bandpass"
        freqs: float | list[float] = Field(description="cut-off(s) in Hz; notch: the centre")
        order: int = Field(4, gt=0, le=12)
        quality: float = Field(30.0, gt=0, description="notch quality factor")

        @field_validator("freqs")
        @classmethod
        def ordered(cls, freqs: float | list[float]) -> float | list[float]:
            values = np.atleast_1d(freqs).tolist()
            if min(values) <= 0:
                raise ValueError(f"cut-offs {values} Hz must be above 0")
            if len(values) == 2 and values[0] >= values[1]:
                raise ValueError(f"the band {values} Hz is reversed or empty: write the low "
                                 f"edge first, e.g. [{min(values):g}, {max(values):g}]")
            return freqs

        @model_validator(mode="after")
        def count(self) -> "Filter.Params":
            n = len(np.atleast_1d(self.freqs))
            want = 2 if self.kind in ("bandpass", "bandstop") else 1
            if n != want:
                raise ValueError(f"a {self.kind} filter takes {want} frequency(ies) in 'freqs', "
                                 f"got {n}")
            return self

    def start(self) -> None:
        self.sos: np.ndarray | None = None
        self.zi: np.ndarray | None = None

    def check(self, port: str, info: StreamInfo) -> None:
        freqs = np.atleast_1d(self.p.freqs).astype(float)
        if info.rate <= 0:
            raise Misconfigured(f"stream {info.name!r} has no regular rate, which a filter "
                                "needs; filter a regularly sampled stream")
        if np.any(freqs >= info.rate / 2):
            raise Misconfigured(f"field 'freqs': cut-offs {freqs.tolist()} Hz must lie below "
                                f"{info.rate / 2:g} Hz, the Nyquist frequency of stream "
                                f"{info.name!r} at {info.rate:g} Hz")

    def design(self, rate: float) -> np.ndarray:
        p = self.p
        freqs = np.atleast_1d(p.freqs).astype(float)
        if p.kind == "notch":
            return signal.tf2sos(*signal.iirnotch(freqs[0], p.quality, fs=rate))
        cutoff = freqs if len(freqs) == 2 else freqs[0]
        return signal.butter(p.order, cutoff, btype=p.kind, fs=rate, output="sos")

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        chunk = inputs["in"]
        if self.sos is None:
            self.sos = self.design(chunk.info.rate)
        x = chunk.data
        if self.zi is None or chunk.gap:
            self.zi = signal.sosfilt_zi(self.sos)[:, :, None] * x[:1].astype(float)
        y, self.zi = signal.sosfilt(self.sos, x, axis=0, zi=self.zi)
        return {"out": chunk.derive(y.astype(x.dtype, copy=False))}
