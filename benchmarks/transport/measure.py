"""From received pulls to latencies, losses and the figures the report shows.

A unit is a source chunk: its newest sample is due when the whole chunk is pushed, so the
latency of a unit is the receipt time of that sample minus its source timestamp. A pull may
return part of a chunk, which says nothing about latency. After a Window, a unit is a window.

What a middle process adds is measured per unit: the same source also feeds a receiver
directly, in the same run, and each unit's receipt through the middle is paired (by counter
or seq) with its direct receipt. Whatever slows the whole machine at that instant slows both
and cancels, which the difference of two separate runs' p99s (it moved by half a
millisecond from run to run) cannot do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgert.benchmarks.common import summarize, thin


@dataclass
class Units:
    """Per unit: receipt time (local_clock), latency (s) and what names it (the counter value
    of its newest sample, or its seq); samples or chunks lost."""

    recv: np.ndarray
    latency: np.ndarray
    lost: int
    keys: np.ndarray | None = None


def lsl_units(pulls: list[tuple], t_start: float, rate: float, chunk: int) -> Units:
    """Counter streams: sample v was stamped t_start + v / rate at the source, whatever
    timestamps a relay hands on (Timeflux dejitters them), and a hole in v is a loss."""
    recv = np.concatenate([np.full(len(v), t) for t, v, _ in pulls])
    values = np.concatenate([v for _, v, _ in pulls])
    ends = (values + 1) % chunk == 0
    latency = recv[ends] - (t_start + values[ends] / rate)
    return Units(recv[ends], latency, int(values[-1] - values[0] + 1 - len(values)),
                 values[ends])


def window_units(pulls: list[tuple]) -> Units:
    """Filtered windows hold no counters: a window ends where time steps back, and a loss
    is a step between window ends longer than the usual hop."""
    recv = np.concatenate([np.full(len(s), t) for t, _, s in pulls])
    stamps = np.concatenate([s for _, _, s in pulls])
    ends = np.r_[np.diff(stamps) < 0, True]
    steps = np.diff(stamps[ends])
    lost = int(np.sum(np.round(steps / np.median(steps)) - 1)) if len(steps) else 0
    return Units(recv[ends], recv[ends] - stamps[ends], lost)


def zmq_units(rows: list[tuple]) -> Units:
    """One message per source chunk, stamped by the sender; a hole in seq is a loss."""
    recv, seq, newest = np.array(rows, dtype=np.float64).T
    return Units(recv, recv - newest, int(seq[-1] - seq[0] + 1 - len(seq)), seq)


def added(through: Units, direct: Units) -> dict:
    """The middle's added latency per unit (receipt through it minus direct receipt, ms) over
    the units both receivers got: p50/p90/p99/max/mean and their count."""
    common, mine, theirs = np.intersect1d(through.keys, direct.keys, return_indices=True)
    if not len(common):
        raise RuntimeError("no unit reached both the direct and the relayed receiver")
    out = summarize((through.recv[mine] - direct.recv[theirs]) * 1e3)
    out["units"] = out.pop("count")
    return out


def figures(units: Units, t0: float, cpu_percent: float) -> dict:
    """Percentiles in ms, losses, CPU, and thinned per-unit latencies for plots."""
    if not len(units.latency):
        raise RuntimeError("no complete unit arrived while measuring")
    ms = units.latency * 1e3
    out = summarize(ms)
    out["units"] = out.pop("count")
    over = np.c_[units.recv - t0, ms].round(5).tolist()
    return {**out, "lost": units.lost, "cpu_percent": float(cpu_percent),
            "samples": thin(ms.round(5).tolist()), "over_time": thin(over)}
