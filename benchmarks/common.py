"""What every suite shares: latency summaries, medians over repeats, progress, the bundle."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory

import numpy as np
from rich.progress import Progress

from edgert.export.bundle import Bundle, BundleError

KEEP = 5000  # samples and over_time points kept per result: enough for a CDF, small JSON


def summarize(ms: np.ndarray | list[float]) -> dict:
    """p50/p90/p99/max/mean in ms and the count (zeros when nothing was measured)."""
    values = np.asarray(ms, dtype=float)
    if len(values) == 0:
        return {"p50_ms": 0.0, "p90_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0, "mean_ms": 0.0,
                "count": 0}
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
            "max_ms": float(values.max()), "mean_ms": float(values.mean()),
            "count": int(len(values))}


def thin(values, keep: int = KEEP) -> list:
    """At most `keep` items, evenly spaced, so a long run does not bloat results.json."""
    values = list(values)
    if len(values) <= keep:
        return values
    step = len(values) / keep
    return [values[int(i * step)] for i in range(keep)]


def median_over(runs: list[dict]) -> dict:
    """One result from repeats: the median of each number; lists and text from the first run,
    and nested dicts merged the same way."""
    first = runs[0]
    out = {}
    for key, value in first.items():
        values = [r[key] for r in runs if key in r]
        if isinstance(value, bool) or not isinstance(value, (int, float, dict)):
            out[key] = value
        elif isinstance(value, dict):
            out[key] = median_over(values)
        else:
            out[key] = float(median(values))
    return out


class Steps:
    """A suite's task on the shared rich progress bar (or nothing, without one)."""

    def __init__(self, progress: Progress | None, name: str, total: int):
        self.progress = progress
        self.name = name
        self.total = total
        self.task = progress.add_task(name, total=total) if progress is not None else None

    def next(self, what: str) -> None:
        """Say what runs now."""
        if self.progress is not None:
            self.progress.update(self.task, description=f"{self.name}: {what}")

    def done(self, steps: int = 1) -> None:
        """Count steps as finished."""
        if self.progress is not None:
            self.progress.advance(self.task, steps)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress.update(self.task, description=self.name, completed=self.total)


def reference_bundle(out_dir: Path) -> Path:
    """The reference bundle (fp32, fp16, int8) under out_dir/bundles, exported once per folder
    so suites that share a folder share the bundle."""
    from edgert.export.reference import export_reference

    path = Path(out_dir) / "bundles" / "reference"
    try:
        bundle = Bundle.load(path)
        if {"fp16", "int8"} <= set(bundle.manifest.variants):
            return path
    except BundleError:
        pass
    return export_reference(path, fp16=True, int8=True).path


@contextmanager
def reference_in(out_dir: Path | None) -> Iterator[Path]:
    """The reference bundle under out_dir, or in a folder removed afterwards."""
    if out_dir is not None:
        yield reference_bundle(out_dir)
        return
    with TemporaryDirectory() as tmp:
        yield reference_bundle(Path(tmp))
