"""Latency recording: per stage and end to end, as percentiles over a recent window."""
from __future__ import annotations

import numpy as np

EMPTY = {"p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "count": 0}


class Latency:
    """Durations in seconds kept in a ring (the most recent `size`); count and max are all-time.

    One writer at a time (a node's stage runs under its lock), so no lock on the hot path.
    """

    def __init__(self, size: int = 1 << 16):
        self.values = np.zeros(size)
        self.count = 0
        self.max = 0.0

    def add(self, seconds: float) -> None:
        self.values[self.count % len(self.values)] = seconds
        self.count += 1
        if seconds > self.max:
            self.max = seconds

    def extend(self, seconds: np.ndarray) -> None:
        seconds = np.asarray(seconds, dtype=float)[-len(self.values):]
        if len(seconds) == 0:
            return
        slots = (self.count + np.arange(len(seconds))) % len(self.values)
        self.values[slots] = seconds
        self.count += len(seconds)
        self.max = max(self.max, float(seconds.max()))

    def recent(self) -> np.ndarray:
        n = min(self.count, len(self.values))
        return self.values[:n].copy()

    def summary(self) -> dict:
        """p50/p90/p99/max in milliseconds and the count (zeros before the first value)."""
        return summarize([self])


def summarize(latencies: list[Latency]) -> dict:
    """Percentiles over the recent values of several recorders taken together."""
    values = np.concatenate([lat.recent() for lat in latencies]) if latencies else np.zeros(0)
    if len(values) == 0:
        return dict(EMPTY)
    p50, p90, p99 = np.percentile(values, [50, 90, 99]) * 1e3
    return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
            "max_ms": max(lat.max for lat in latencies) * 1e3,
            "count": sum(lat.count for lat in latencies)}


class Tracer:
    """One Latency per stage, and one per sink from the newest sample's source timestamp."""

    def __init__(self, stages: list[str], sinks: set[str]):
        self.stages = {name: Latency() for name in stages}
        self.sinks = {name: Latency() for name in sinks}

    def end_to_end(self) -> dict:
        return summarize(list(self.sinks.values()))
