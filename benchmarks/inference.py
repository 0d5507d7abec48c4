"""Every bundle under ONNX Runtime (fp32, fp16, int8) against torch eager, single-stream at
batch 1, in one process; and why edgert turns ONNX Runtime's thread spinning off.

By default: the reference bundle and every live method's model on this machine, exported
with its fp16 and int8 variants. A full run trains a method that has no model here yet
(quick training, as `edgert demo` does); a quick run skips it and says how to train it.

The engines are measured with `edgert.benchmarks.model` (warm-up excluded, seeded inputs, CPU and
memory sampled). The spinning check runs ONNX Runtime at a steady query rate beside a second
thread running a small torch model, once with spinning off (edgert) and once with ONNX
Runtime's default options (spinning on), both with ONNX Runtime's default thread count, and
reports how much the other thread slows down: that thread stands for the rest of a pipeline.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from rich.table import Table

from edgert.devices.telemetry import Sampler
from edgert.export.bundle import Bundle, ExportError
from edgert.runtime.backends.ort import session_options
from edgert.benchmarks.common import Steps, median_over, reference_in, summarize
from edgert.benchmarks.model import bench_model, random_inputs
from edgert.methods.cache import trained_checkpoint


@dataclass(frozen=True)
class Config:
    queries: int = 2000
    warmup: int = 100
    repeats: int = 3
    seed: int = 0
    threads: int = 1
    spin_seconds: float = 6.0
    spin_rounds: int = 6
    spin_rate: float = 200.0


QUICK = Config(queries=200, warmup=30, repeats=1, spin_seconds=1.5)
FULL = Config()


def engines(path: Path, cfg: Config, seed: int) -> dict:
    """torch eager and every ONNX variant of one bundle, with ratios to torch and to fp32."""
    rows = {"torch": engine(path, "torch", "fp32", cfg, seed)}
    for variant in Bundle.load(path).manifest.variants:
        rows[f"ort_{variant}"] = engine(path, "ort-cpu", variant, cfg, seed)
    return with_ratios(rows)


def engine(path: Path, backend: str, variant: str, cfg: Config, seed: int) -> dict:
    """bench_model's single-stream row; its latencies become `samples`, as in every suite."""
    row = bench_model(str(path), [backend], queries=cfg.queries, warmup=cfg.warmup,
                      variant=variant, threads=cfg.threads, seed=seed,
                      latencies=True)["results"][backend]
    if "latencies_ms" in row:
        row["samples"] = row.pop("latencies_ms")
    return row


def with_ratios(rows: dict) -> dict:
    """p50 latency of each engine over torch's and over ONNX Runtime fp32's (< 1: faster)."""
    torch_p50 = rows["torch"].get("p50_ms")
    fp32_p50 = rows.get("ort_fp32", {}).get("p50_ms")
    for name, row in rows.items():
        if "skipped" in row:
            continue
        if torch_p50:
            row["latency_vs_torch"] = row["p50_ms"] / torch_p50
        if fp32_p50 and name.startswith("ort_"):
            row["latency_vs_fp32"] = row["p50_ms"] / fp32_p50
    return rows


def companion(ready: threading.Event, stop: threading.Event,
              calls: list[tuple[float, float]]) -> None:
    """The rest of a pipeline: a small torch model on torch's own threads; (start, end) of
    every call once warm. The warm-up is outside the phase: beside a spinning ONNX Runtime
    on 2 cores it outlasted a quick phase, which then timed no call at all."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(22, 40, 25).eval()
    x = torch.randn(1, 22, 250)
    with torch.inference_mode():
        for _ in range(200):  # torch's thread pool and caches, before timing
            conv(x)
        ready.set()
        while not stop.is_set():
            t0 = time.perf_counter()
            conv(x)
            calls.append((t0, time.perf_counter()))


@dataclass
class Phase:
    """One stretch of the companion beside (or without) ONNX Runtime."""

    calls: list[tuple[float, float]]
    latencies: list[float]
    cpu_pct: float | None


def paced(session: ort.InferenceSession | None, feed: dict, seconds: float,
          rate: float) -> list[float]:
    """ONNX Runtime at `rate` queries per second for `seconds` (without a session, a wait)."""
    if session is None:
        time.sleep(seconds)
        return []
    latencies = []
    start = time.perf_counter()
    for i in range(int(seconds * rate)):
        time.sleep(max(0.0, start + i / rate - time.perf_counter()))
        t0 = time.perf_counter()
        session.run(None, feed)
        latencies.append(time.perf_counter() - t0)
    return latencies


def beside(session: ort.InferenceSession | None, feed: dict, seconds: float,
           rate: float) -> Phase:
    ready, stop, calls = threading.Event(), threading.Event(), []
    thread = threading.Thread(target=companion, args=(ready, stop, calls), daemon=True)
    thread.start()
    ready.wait()
    with Sampler(interval=0.1, tools=False) as sampler:
        latencies = paced(session, feed, seconds, rate)
        stop.set()
        thread.join()
    return Phase(calls, latencies, sampler.summary().get("cpu_pct_mean"))


def phase_figures(phases: list[Phase]) -> dict:
    """The companion's call times and rate, and ONNX Runtime's latency, over all rounds."""
    calls = np.array([c for p in phases for c in p.calls])
    active = sum(p.calls[-1][1] - p.calls[0][0] for p in phases if p.calls)
    latencies = [x for p in phases for x in p.latencies]
    out = {"companion": {**summarize((calls[:, 1] - calls[:, 0]) * 1e3),
                         "iterations_per_s": len(calls) / active},
           "cpu_pct_mean": float(np.mean([p.cpu_pct or 0.0 for p in phases]))}
    if latencies:
        out["ort"] = summarize(np.array(latencies) * 1e3)
    return out


def spinning(path: Path, cfg: Config, seed: int) -> dict:
    """Companion alone, beside ONNX Runtime with spinning off, beside it with spinning on;
    torch on every core, as by default (the torch engine above set it to `threads`)."""
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        return spin_phases(path, cfg, seed)
    finally:
        torch.set_num_threads(before)


def spin_phases(path: Path, cfg: Config, seed: int) -> dict:
    """The three conditions interleaved in short rounds, so a passing load on the machine
    weighs on all three alike."""
    bundle = Bundle.load(path)
    model = str(bundle.model_path("fp32"))
    feed = random_inputs(bundle.manifest, 1, seed)
    sessions = {"alone": None}
    for name, opts in (("spin_off", session_options(None)), ("spin_on", ort.SessionOptions())):
        sessions[name] = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        for _ in range(cfg.warmup):
            sessions[name].run(None, feed)
    phases: dict[str, list[Phase]] = {name: [] for name in sessions}
    for _ in range(cfg.spin_rounds):
        for name, session in sessions.items():
            phases[name].append(beside(session, feed, cfg.spin_seconds / cfg.spin_rounds,
                                       cfg.spin_rate))
    out = {name: phase_figures(runs) for name, runs in phases.items()}
    alone = out["alone"]["companion"]["iterations_per_s"]
    for name in ("spin_off", "spin_on"):
        out[name]["companion_slowdown"] = alone / out[name]["companion"]["iterations_per_s"]
    return out


def run_inference(quick: bool, out_dir: Path | None = None, progress=None,
                  config: Config | None = None, bundles: list[Path] | None = None) -> dict:
    """Engines and spinning for each bundle; by default the reference bundle and the live
    methods' bundles (fp32, fp16, int8) exported into out_dir."""
    cfg = config or (QUICK if quick else FULL)
    per_bundle = 2 * cfg.repeats
    if bundles:
        steps = Steps(progress, "inference", per_bundle * len(bundles))
        return measure_all([Path(b) for b in bundles], cfg, steps)
    methods = live_methods()
    steps = Steps(progress, "inference", (1 + len(methods)) * (1 + per_bundle))
    steps.next("export the reference bundle")
    with reference_in(out_dir) as path:
        steps.done()
        paths, skipped = method_bundles(methods, path.parent / "methods", quick, steps)
        result = measure_all([path, *paths], cfg, steps)
    result["results"].update(skipped)
    return result


def live_methods() -> list:
    """The installed methods that export a bundle for a live pipeline."""
    from edgert.runtime.methods import find, installed

    return [m for m in map(find, sorted(installed())) if m.kind == "stream" and m.export]


def method_bundles(methods: list, root: Path, quick: bool,
                   steps: Steps) -> tuple[list[Path], dict]:
    """Each method's model exported with fp16 and int8 under root; in a quick run only those
    already trained on this machine (the others skipped, saying how to train them)."""
    paths, skipped = [], {}
    for method in methods:
        steps.next(f"export {method.name} (fp32, fp16, int8)")
        checkpoint = trained_checkpoint(method.name)
        if checkpoint is None and quick:
            skipped[method.name] = {"skipped": f"no trained {method.name} model on this "
                                    f"machine; a full run trains one, or run `edgert demo` "
                                    f"for it once"}
        else:
            try:
                paths.append(method.export(root / method.name, checkpoint, fp16=True,
                                           int8=True).path)
            except ExportError as e:
                skipped[method.name] = {"skipped": f"export failed: {e}"}
        steps.done()
    return paths, skipped


def measure_all(paths: list[Path], cfg: Config, steps: Steps) -> dict:
    results = {}
    for path in paths:
        name = Bundle.load(path).manifest.name
        runs, spins = [], []
        for i in range(cfg.repeats):
            steps.next(f"{name}: engines")
            runs.append(engines(path, cfg, cfg.seed + i))
            steps.done()
            steps.next(f"{name}: ONNX Runtime spinning beside other work")
            spins.append(spinning(path, cfg, cfg.seed + i))
            steps.done()
        results[name] = {"path": str(path), "engines": median_over(runs),
                         "spinning": median_over(spins)}
    steps.finish()
    return {"config": {**asdict(cfg), "batch": 1, "scenario": "single-stream",
                       "spin_intra_op_threads": 0,  # ONNX Runtime default: one per core
                       "spin_companion": "torch Conv1d(22, 40, 25) on 1x22x250, "
                                         f"{os.cpu_count()} torch threads",
                       "seeds": [cfg.seed + i for i in range(cfg.repeats)]},
            "results": results}


def table(name: str, result: dict) -> Table:
    """One bundle's engines as a terminal table."""
    t = Table(title=f"{name}: single-stream, batch 1 (ms)", title_justify="left")
    for col in ("engine", "p50", "p99", "vs torch", "vs fp32", "cpu %", "rss MB"):
        t.add_column(col, justify="left" if col == "engine" else "right")
    for engine, r in result["engines"].items():
        if "skipped" in r:
            t.add_row(engine, "", "", "", "", "", r["skipped"])
            continue
        t.add_row(engine, f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}",
                  f"{r.get('latency_vs_torch', 0):.2f}x",
                  f"{r['latency_vs_fp32']:.2f}x" if "latency_vs_fp32" in r else "",
                  f"{r.get('cpu_pct_mean') or 0:.0f}", f"{r.get('rss_peak_mb') or 0:.0f}")
    return t
