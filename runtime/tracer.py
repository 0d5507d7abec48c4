"""Latency recording: per stage and end to end, as percentiles over a recent window."""
from __future__ import annotations

import threading

import numpy as np


class Latency:
    """Durations in seconds kept in a ring (the most recent `size`); count and max are all-time."""

    def __init__(self, size: int = 1 << 16):
        self.values = np.zeros(size)
        self.count = 0
        self.max = 0.0
        self.lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self.lock:
            self.values[self.count % len(self.values)] = seconds
            self.count += 1
            self.max = max(self.max, seconds)

    def extend(self, seconds: np.ndarray) -> None:
        seconds = np.asarray(seconds, dtype=float)
        if len(seconds) == 0:
            return
        with self.lock:
            slots = (self.count + np.arange(len(seconds))) % len(self.values)
            self.values[slots[-len(self.values):]] = seconds[-len(self.values):]
            self.count += len(seconds)
            self.max = max(self.max, float(seconds.max()))

    def recent(self) -> np.ndarray:
        n = min(self.count, len(self.values))
        if self.count <= len(self.values):
            return self.values[:n].copy()
        start = self.count % len(self.values)
        return np.roll(self.values, -start)

    def summary(self) -> dict:
        """p50/p90/p99/max in milliseconds and the count (zeros before the first value)."""
        values = self.recent()
        if len(values) == 0:
            return {"p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "count": 0}
        p50, p90, p99 = np.percentile(values, [50, 90, 99]) * 1e3
        return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
                "max_ms": self.max * 1e3, "count": self.count}


class Tracer:
    """One Latency per stage plus end to end (source timestamp of the newest sample to sink)."""

    def __init__(self, stages: list[str]):
        self.stages = {name: Latency() for name in stages}
        self.end_to_end = Latency()
