"""The live stage-1 node: an aligned 10-s window of the four sensors in, stage-2 tokens out.

A sensor whose channels are missing from the window (it never connected, so the aligner had
nothing to hold) is filled flat: stage 1 marks it missing, its quality drops, and the gates
move away from it. The estimate degrades; the pipeline keeps running.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from edgert.methods.cogmoe.features import ALIGNED_CHANNELS, FEATURES, QUALITY, window_input
from edgert.methods.cogmoe.simulate import MODALITIES
from edgert.runtime.node import Misconfigured, Node, Params
from edgert.streams import Chunk, StreamInfo

TOKEN_FEATURES = tuple(f"band{i}" for i in range(FEATURES - 2)) + (
    "level", "masked", "q_snr", "q_present", "q_autocorr", "rel_snr", "rel_present",
    "rel_autocorr")
QUALITY_NAMES = tuple(f"{m}_{q}" for m in MODALITIES for q in ("snr", "present", "autocorr"))
assert len(TOKEN_FEATURES) == FEATURES + QUALITY


class Stage1(Node):
    """`out`: (sensors * steps, features + quality) tokens; `quality`: one sample of every
    sensor's absolute quality indices."""

    outputs = ("out", "quality")

    class Params(Params):
        pass

    def start(self) -> None:
        self.filled = {m: 0 for m in MODALITIES}
        # its thread is made at the first window, by a pipeline thread: it takes its priority
        self.beside = ThreadPoolExecutor(1, thread_name_prefix=f"edgert-{self.name}-quality")

    def stop(self) -> None:
        self.beside.shutdown()

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        chunk = inputs["in"]
        window = self._complete(chunk)
        x, quality, rec = window_input(window, chunk.info.rate, self.beside)
        stamp = chunk.timestamps[-1]
        tokens = StreamInfo(name=f"{chunk.info.name}-tokens", type="Features",
                            channels=TOKEN_FEATURES, rate=0.0)
        q = StreamInfo(name=f"{chunk.info.name}-quality", type="Quality",
                       channels=QUALITY_NAMES, rate=0.0)
        return {"out": chunk.derive(x, np.full(len(x), stamp), tokens),
                "quality": chunk.derive(quality.reshape(1, -1).astype(np.float32),
                                        np.array([stamp]), q)}

    def check(self, port: str, info: StreamInfo) -> None:
        unknown = {c.lower() for c in info.channels} - {c.lower() for c in ALIGNED_CHANNELS}
        if unknown or info.rate <= 0:
            raise Misconfigured(
                f"stream {info.name!r} must be the `align` node's output over inputs eeg, ecg, "
                f"eda, gaze (channels {list(ALIGNED_CHANNELS)}); got unknown channels "
                f"{sorted(unknown)} at rate {info.rate}")

    def _complete(self, chunk: Chunk) -> np.ndarray:
        """The window with every aligned channel in order; absent sensors flat at zero."""
        names = [c.lower() for c in chunk.info.channels]
        out = np.zeros((len(chunk), len(ALIGNED_CHANNELS)), np.float64)
        absent = set()
        for i, name in enumerate(ALIGNED_CHANNELS):
            if name.lower() in names:
                out[:, i] = chunk.data[:, names.index(name.lower())]
            else:
                absent.add(name.split(":")[0])
        for sensor in absent:
            self.filled[sensor] += 1
        return out

    def stats(self) -> dict:
        return {"windows_missing_sensor": self.filled}
