"""The fixed-size implicit memory: one encoder's key/value cache as a fixed-shape array.

Slots 0..sinks-1 hold the episode's first frames (attention sinks, never evicted); the other
`window` slots are a ring of the most recent frames. The array's shape never changes, so an
ONNX graph takes it as an input and returns the new frame's keys/values as an output; this
class (numpy, shared by the torch agent and the live node) writes them into their slot.
"""
from __future__ import annotations

import numpy as np

from edgert.methods.janusvln.model import Memory


class KVCache:
    """(layers, 2, slots, tokens, width) keys/values and the (slots,) mask of filled slots."""

    def __init__(self, layers: int, tokens: int, width: int, memory: Memory):
        if memory.slots is None:
            raise ValueError("a fixed-size cache needs a window; full history has none")
        self.memory = memory
        self.kv = np.zeros((layers, 2, memory.slots, tokens, width), np.float32)
        self.valid = np.zeros(memory.slots, np.float32)
        self.frames = 0

    def slot(self) -> int:
        """Where the next frame goes: a sink while there are free sinks, else the ring."""
        sinks, window = self.memory.sinks, self.memory.window
        return self.frames if self.frames < sinks else sinks + (self.frames - sinks) % window

    def add(self, kv: np.ndarray) -> None:
        """Store one frame's keys/values (layers, 2, tokens, width)."""
        slot = self.slot()
        self.kv[:, :, slot] = kv
        self.valid[slot] = 1.0
        self.frames += 1

    def reset(self) -> None:
        self.kv[:] = 0
        self.valid[:] = 0
        self.frames = 0

    @property
    def nbytes(self) -> int:
        return self.kv.nbytes + self.valid.nbytes
