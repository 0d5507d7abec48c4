"""Epoch: cuts a cue-locked trial out of a regular stream at each marker of a marker stream."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
from pydantic import Field

from edgert.runtime.node import Misconfigured, Node, Params
from edgert.streams import Chunk, StreamInfo


class Epoch(Node):
    """For each marker matching `pattern` on `markers`, emits the `signal` samples from
    `offset` to `offset + length` seconds after the marker's time, once they have arrived;
    on `cues`, that marker, stamped with the epoch's last sample (for scoring, `score`).

    Markers may come before or after their samples (LSL delivers them on separate inlets);
    `history` seconds of signal are kept so a late marker still finds its trial. A marker whose
    trial is already older than that is counted as `missed`.
    """

    inputs = ("signal", "markers")
    outputs = ("out", "cues")

    class Params(Params):
        offset: float = Field(0.0, description="seconds from the marker to the epoch's start")
        length: float = Field(gt=0, description="epoch length in seconds")
        pattern: str | None = Field(None, description="regular expression a marker must "
                                    "match in full to start an epoch; none: every marker")
        history: float = Field(10.0, gt=0, description="seconds of signal kept for late "
                                                       "markers")

    def start(self) -> None:
        self.regex = re.compile(self.p.pattern) if self.p.pattern else None
        self.data: np.ndarray | None = None
        self.stamps = np.zeros(0)
        self.cues: list[tuple[float, str]] = []  # (time, marker) waiting for samples
        self.emitted = self.missed = self.ignored = 0

    def check(self, port: str, info: StreamInfo) -> None:
        if port == "signal" and info.rate <= 0:
            raise Misconfigured(f"signal stream {info.name!r} is irregular; an Epoch needs a "
                                "nominal rate (is the marker stream on input 'signal'?)")

    def process(self, inputs: dict[str, Chunk]) -> dict[str, list[Chunk]] | None:
        (port, chunk), = inputs.items()
        if port == "markers":
            self._markers(chunk)
            return self._ready(None)
        self._append(chunk)
        return self._ready(chunk)

    def _markers(self, chunk: Chunk) -> None:
        for stamp, value in zip(chunk.timestamps, chunk.data[:, 0]):
            if self.regex is None or self.regex.fullmatch(str(value)):
                self.cues.append((float(stamp), str(value)))
            else:
                self.ignored += 1

    def _append(self, chunk: Chunk) -> None:
        if self.data is None or chunk.gap or self.data.shape[1:] != chunk.data.shape[1:]:
            self.data, self.stamps = chunk.data[:0], np.zeros(0)
            self.n = round(self.p.length * chunk.info.rate)
            self.keep = max(round(self.p.history * chunk.info.rate), self.n)
        self.data = np.concatenate([self.data, chunk.data])[-self.keep:]
        self.stamps = np.concatenate([self.stamps, chunk.timestamps])[-self.keep:]
        self.last = chunk

    def _ready(self, chunk: Chunk | None) -> dict[str, list[Chunk]] | None:
        if self.data is None or not len(self.stamps):
            return None
        out, cues, waiting = [], [], []
        for cue, marker in sorted(self.cues):
            first = int(np.searchsorted(self.stamps, cue + self.p.offset))
            if first == 0 and self.stamps[0] > cue + self.p.offset + 1.5 / self.last.info.rate:
                self.missed += 1
            elif first + self.n <= len(self.stamps):
                out.append(self._cut(first, chunk or self.last))
                cues.append(self._cue(marker, out[-1]))
            else:
                waiting.append((cue, marker))
        self.cues = waiting
        self.emitted += len(out)
        return {"out": out, "cues": cues} if out else None

    def _cut(self, first: int, chunk: Chunk) -> Chunk:
        part = slice(first, first + self.n)
        return chunk.derive(self.data[part].copy(), self.stamps[part].copy(),
                            replace(chunk.info, name=f"{chunk.info.name}-epoch"))

    def _cue(self, marker: str, epoch: Chunk) -> Chunk:
        info = StreamInfo(name=f"{epoch.info.name}-cues", type="Markers", channels=("cue",),
                          rate=0.0, dtype="string")
        return epoch.derive(np.array([[marker]], dtype=object), epoch.timestamps[-1:], info)

    def stats(self) -> dict:
        return {"epochs": self.emitted, "missed": self.missed, "ignored_markers": self.ignored}
