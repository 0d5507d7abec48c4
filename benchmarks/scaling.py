"""How cost grows with work on one machine: channels, rate, concurrent streams and concurrent
pipelines. Each point runs `edgert run` (its own process) on a pipeline of LSL inlet ->
band-pass -> LSL outlet per stream, fed by simulated streams replayed from this process in
chunks of 10 ms; it records the pipeline's CPU, end-to-end p50/p99 (source stamp to outlet)
and drops. The largest point of each dimension whose p99 stays under the bound is reported.
"""
from __future__ import annotations

import json
import tempfile
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import yaml

from edgert.benchmarks.pipelines import connected, edgert_run, stop
from edgert.devices.telemetry import Sampler
from edgert.streams import StreamInfo
from edgert.streams.replay import Replay


@dataclass(frozen=True)
class Config:
    seconds: float = 10.0
    bound_ms: float = 20.0
    channels: tuple[int, ...] = (8, 32, 64, 128, 256)
    rates: tuple[float, ...] = (250.0, 1000.0, 4000.0, 16000.0, 30000.0)
    streams: tuple[int, ...] = (1, 4, 8, 16, 32)
    pipelines: tuple[int, ...] = (1, 2, 4, 8)
    connect_timeout: float = 60.0


QUICK = Config(seconds=3.0, channels=(8, 256), rates=(250.0, 30000.0), streams=(1, 8),
               pipelines=(1, 2))
FULL = Config()


def _spec(names: list[str]) -> dict:
    """One inlet -> band-pass -> outlet chain per stream."""
    nodes, edges = [], []
    for k, name in enumerate(names):
        nodes += [{"name": f"in{k}", "node": "lsl_inlet", "params": {"name": name}},
                  {"name": f"bp{k}", "node": "filter",
                   "params": {"kind": "bandpass", "freqs": [1, 40], "order": 4}},
                  {"name": f"out{k}", "node": "lsl_outlet", "params": {"name": f"{name}-out"}}]
        edges += [{"from": f"in{k}", "to": f"bp{k}"}, {"from": f"bp{k}", "to": f"out{k}"}]
    return {"name": "scaling", "nodes": nodes, "edges": edges}


def point(channels: int, rate: float, streams: int, pipelines: int, cfg: Config) -> dict:
    """Run `pipelines` processes of `streams` streams each, `channels` x `rate` Hz."""
    rng = np.random.default_rng(0)
    samples = int(cfg.seconds * rate)
    chunk = max(1, int(rate // 100))
    with tempfile.TemporaryDirectory() as tmp:
        runs = []
        for p in range(pipelines):
            names = [f"scale-{uuid.uuid4().hex[:8]}" for _ in range(streams)]
            path = Path(tmp) / f"p{p}.yaml"
            path.write_text(yaml.safe_dump(_spec(names)))
            players = [Replay.from_arrays(StreamInfo.make(n, channels, rate=rate, source_id=n),
                                          rng.standard_normal((samples, channels)).astype(
                                              np.float32), chunk_size=chunk) for n in names]
            for player in players:
                player.open()
            report = Path(tmp) / f"p{p}.json"
            runs.append((players, edgert_run(path, [], report, Path(tmp) / f"p{p}.log"),
                         report))
        try:
            for players, proc, _ in runs:
                if not connected(players, proc, cfg.connect_timeout):
                    return {"skipped": "a pipeline never connected"}
            with Sampler(pid=runs[0][1].pid, interval=0.2) as sampler:
                for players, _, _ in runs:
                    for player in players:
                        player.start()
                for players, _, _ in runs:
                    for player in players:
                        player.wait()
            for _, proc, _ in runs:
                stop(proc)
        finally:
            for players, proc, _ in runs:
                for player in players:
                    player.stop()
                if proc.poll() is None:
                    proc.kill()
        reports = [json.loads(r.read_text()) for _, _, r in runs if r.exists()]
    if len(reports) < pipelines:
        return {"skipped": "a pipeline wrote no report"}
    e2e = [r["end_to_end"] for r in reports]
    usage = sampler.summary()
    return {"channels": channels, "rate_hz": rate, "streams": streams, "pipelines": pipelines,
            "p50_ms": float(np.median([e["p50_ms"] for e in e2e])),
            "p99_ms": float(max(e["p99_ms"] for e in e2e)),
            "dropped": int(sum(r["dropped"] for r in reports)),
            "cpu_pct_first_pipeline": usage.get("cpu_pct_mean")}


def run_scaling(quick: bool, progress=None, task=None) -> dict:
    cfg = QUICK if quick else FULL
    grid = {"channels": [(c, 250.0, 1, 1) for c in cfg.channels],
            "rate_hz": [(8, r, 1, 1) for r in cfg.rates],
            "streams": [(8, 250.0, s, 1) for s in cfg.streams],
            "pipelines": [(8, 250.0, 1, p) for p in cfg.pipelines]}
    curves, held = {}, {}
    for dimension, points in grid.items():
        curves[dimension] = []
        for args in points:
            if progress is not None:
                progress.update(task, description=f"reliability: scaling {dimension} "
                                f"{dict(zip(('channels', 'rate', 'streams', 'pipelines'), args))}")
            curves[dimension].append(point(*args, cfg))
        ok = [p for p in curves[dimension] if "skipped" not in p and p["p99_ms"] <= cfg.bound_ms]
        held[dimension] = max((p[dimension] for p in ok), default=None)
    return {"config": asdict(cfg), "curves": curves, "largest_held": held}
