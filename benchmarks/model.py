"""Benchmark a bundle on several backends with MLPerf LoadGen's scenario meanings.

single-stream: one query in flight at a time; latency percentiles are the figure.
offline: every query available at once; throughput is the figure (batched when the first
input dim is dynamic). Warm-up runs are excluded; inputs are seeded and made before timing.
"""
from __future__ import annotations

import logging
import time
from typing import Literal

import numpy as np

from edgert.devices.placement import check_placement, measure_peak_memory
from edgert.devices.profile import load_profile
from edgert.devices.telemetry import Sampler
from edgert.export import parity
from edgert.export.bundle import Bundle, Manifest
from edgert.runtime.backends import Backend, open_backend

log = logging.getLogger(__name__)

Scenario = Literal["single-stream", "offline"]


def random_inputs(manifest: Manifest, batch: int, seed: int) -> dict:
    """Seeded inputs: a dynamic first dim at `batch`, other dynamic dims at their export size."""
    dims = dict(manifest.example_dims)
    for spec in manifest.inputs:
        for i, d in enumerate(spec.shape):
            if isinstance(d, str):
                dims[d] = batch if i == 0 else dims.get(d, 1)
    return parity.random_inputs(manifest.inputs, dims, seed)


def _percentiles(seconds: list[float]) -> dict:
    p50, p90, p99 = np.percentile(seconds, [50, 90, 99]) * 1e3
    return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
            "mean_ms": float(np.mean(seconds) * 1e3), "max_ms": float(np.max(seconds) * 1e3)}


def single_stream(backend: Backend, feeds: list[dict]) -> dict:
    latencies = []
    for feed in feeds:
        t0 = time.perf_counter()
        backend.run(feed)
        latencies.append(time.perf_counter() - t0)
    return {**_percentiles(latencies), "queries": len(feeds),
            "latencies_ms": [s * 1e3 for s in latencies]}


def offline(backend: Backend, feeds: list[dict], batched: bool) -> dict:
    items = sum(len(next(iter(f.values()))) if batched else 1 for f in feeds)
    t0 = time.perf_counter()
    for feed in feeds:
        backend.run(feed)
    elapsed = time.perf_counter() - t0
    return {"samples_per_s": items / elapsed, "samples": items, "seconds": elapsed}


def bench_backend(bundle: Bundle, kind: str, scenario: Scenario, queries: int, warmup: int,
                  variant: str, threads: int | None, batch: int, seed: int) -> dict:
    opened: list[Backend] = []
    first = random_inputs(bundle.manifest, 1, seed)

    def load_and_run() -> None:
        opened.append(open_backend(bundle, kind, variant, threads, warmup=0))
        opened[0].run(first)

    peak = measure_peak_memory(load_and_run)
    backend = opened[0]
    if getattr(backend, "fell_back", False):
        raise RuntimeError(f"{kind}: ONNX Runtime fell back to {backend.provider} here")
    batched = scenario == "offline" and isinstance(bundle.manifest.inputs[0].shape[0], str)
    size = batch if batched else 1
    n = max(1, queries // size) if batched else queries
    feeds = [random_inputs(bundle.manifest, size, seed + i) for i in range(n)]
    for feed in feeds[:warmup]:
        backend.run(feed)
    with Sampler(interval=0.1, tools=True) as sampler:
        result = single_stream(backend, feeds) if scenario == "single-stream" else \
            offline(backend, feeds, batched)
    usage = sampler.summary()
    backend.close()
    return {"backend": kind, "provider": backend.provider, "variant": variant,
            "peak_memory_mb": peak, "warmup": warmup, "batch": size, **result,
            "cpu_pct_mean": usage.get("cpu_pct_mean"), "rss_peak_mb": usage.get("rss_peak_mb"),
            **({"gpu": usage["gpu"]} if "gpu" in usage else {})}


def bench_model(path: str, backends: list[str], scenario: Scenario = "single-stream",
                queries: int = 300, warmup: int = 30, variant: str = "fp32",
                threads: int | None = 1, batch: int = 32, seed: int = 0,
                profile: str | None = None, latencies: bool = False) -> dict:
    """Figures per backend; a backend that cannot run here is reported with the reason.

    With `latencies`, single-stream results keep every latency in ms (for CDF plots)."""
    bundle = Bundle.load(path)
    results = {}
    for kind in backends:
        try:
            results[kind] = bench_backend(bundle, kind, scenario, queries, warmup, variant,
                                          threads, batch, seed)
        except (ImportError, RuntimeError) as e:
            log.warning("backend %s skipped: %s", kind, e)
            results[kind] = {"backend": kind, "skipped": str(e)}
            continue
        if not latencies:
            results[kind].pop("latencies_ms", None)
        if profile:
            check_placement(results[kind]["peak_memory_mb"], load_profile(profile),
                            f"bundle {bundle.manifest.name!r} ({variant}) on {kind}")
    return {"bundle": bundle.manifest.name, "path": str(path), "scenario": scenario,
            "variant": variant, "threads": threads, "results": results}
