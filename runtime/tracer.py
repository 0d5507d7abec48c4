"""Latency recording: per stage and end to end, as percentiles over a recent window."""
from __future__ import annotations

import numpy as np

EMPTY = {"p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "count": 0,
         "clock_faults": 0}
CLOCK_TOLERANCE_S = 0.005  # clock-sync jitter: a stamp up to this far ahead reads as 0 s
MAX_LATENCY_S = 86400.0  # a stamp older than a day is in another clock, not late


class Latency:
    """Durations in seconds kept in a ring (the most recent `size`); count and max are all-time.

    A latency from a source's timestamp that is negative beyond `CLOCK_TOLERANCE_S` (the
    sender's clock ahead of this one), over `MAX_LATENCY_S`, or not finite, is a clock fault:
    counted in `clock_faults`, kept out of the percentiles, which it would poison. One writer at a time (a node's stage runs under
    its lock), so no lock on the hot path.
    """

    def __init__(self, size: int = 1 << 16):
        self.values = np.full(size, 0.0)  # written now: no page faults while a run fills it
        self.count = 0
        self.max = 0.0
        self.clock_faults = 0

    def add(self, seconds: float) -> bool:
        """Record one latency; False if it was a clock fault."""
        if not np.isfinite(seconds) or seconds > MAX_LATENCY_S:
            self.clock_faults += 1
            return False
        if seconds < 0:
            if seconds < -CLOCK_TOLERANCE_S:
                self.clock_faults += 1
                return False
            seconds = 0.0
        self.values[self.count % len(self.values)] = seconds
        self.count += 1
        if seconds > self.max:
            self.max = seconds
        return True

    def extend(self, seconds: np.ndarray) -> None:
        seconds = np.asarray(seconds, dtype=float)[-len(self.values):]
        faults = ~((seconds >= -CLOCK_TOLERANCE_S) & (seconds <= MAX_LATENCY_S))
        self.clock_faults += int(faults.sum())
        seconds = np.maximum(seconds[~faults], 0.0)
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
    faults = sum(lat.clock_faults for lat in latencies)
    if len(values) == 0:
        return dict(EMPTY, clock_faults=faults)
    p50, p90, p99 = np.percentile(values, [50, 90, 99]) * 1e3
    return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
            "max_ms": max(lat.max for lat in latencies) * 1e3,
            "count": sum(lat.count for lat in latencies), "clock_faults": faults}


class Tracer:
    """One Latency per stage, and one per sink from the newest sample's source timestamp."""

    def __init__(self, stages: list[str], sinks: set[str]):
        self.stages = {name: Latency() for name in stages}
        self.sinks = {name: Latency() for name in sinks}

    def end_to_end(self) -> dict:
        return summarize(list(self.sinks.values()))
