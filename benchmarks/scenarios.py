"""MLPerf LoadGen scenarios on a live pipeline: feed -> infer (reference bundle, ort-cpu) -> sink.

single-stream: one query in flight; the next leaves when the last is done; p90 is the figure.
multi-stream: `streams` queries issued together every `interval_ms`; p99 of the slowest.
server: Poisson arrivals at a rate; the highest rate whose p99 meets `bound_ms` is the figure.
offline: every query due at once; throughput is the figure.
offered load: Poisson arrivals from below to past saturation on a `block` edge (lossless:
latency grows once saturated) and a `latest` edge (drops the oldest: latency stays flat).

A query's latency runs from when it was due to when the sink has it, so waiting behind earlier
queries counts. Queries due in the first `warmup_s` run but are not measured; queries still
unissued when a run ends are its backlog. Arrivals are seeded: repeat i uses seed + i.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from edgert.export.reference import CHANNELS, RATE, synthetic_eeg
from edgert.benchmarks.common import Steps, median_over, reference_in, summarize, thin
from edgert.benchmarks.feed import query_info
from edgert.runtime.pipeline import Pipeline
from edgert.runtime.spec import PipelineSpec


@dataclass(frozen=True)
class Config:
    seconds: float = 5.0
    warmup_s: float = 1.0
    repeats: int = 3
    seed: int = 0
    streams: int = 8
    interval_ms: float = 25.0
    bound_ms: float = 10.0
    search_steps: int = 5
    loads: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 10.0)  # x saturation


QUICK = Config(seconds=1.5, warmup_s=0.3, repeats=1, streams=4, search_steps=4)
FULL = Config()


@dataclass
class Run:
    """One pipeline run: per finished query its number, due and done times (s from start)."""

    seq: np.ndarray
    due: np.ndarray
    done: np.ndarray
    planned: int
    issued: int
    dropped: int

    @property
    def latency_ms(self) -> np.ndarray:
        return (self.done - self.due) * 1e3


class Load:
    """Runs the pipeline under a plan of issue times; holds what every run shares."""

    def __init__(self, bundle: Path, cfg: Config):
        self.bundle = bundle
        self.cfg = cfg
        eeg, _ = synthetic_eeg(16, seed=cfg.seed)
        self.windows = [np.ascontiguousarray(w.T) for w in eeg]
        self.info = query_info(CHANNELS, RATE)

    def spec(self, due: list[float] | None, policy: str) -> PipelineSpec:
        feed = {"windows": self.windows, "info": self.info, "due": due,
                "seconds": self.cfg.seconds}
        return PipelineSpec.model_validate({
            "name": f"scenario-{policy}",
            "nodes": [{"name": "feed", "node": "edgert.benchmarks.feed:Feed", "params": feed},
                      {"name": "infer", "node": "infer",
                       "params": {"bundle": str(self.bundle), "backend": "ort-cpu"}},
                      {"name": "sink", "node": "edgert.benchmarks.feed:Record"}],
            "edges": [{"from": "feed", "to": "infer", "policy": policy,
                       "capacity": 1 if policy == "latest" else 64},
                      {"from": "infer", "to": "sink"}]})

    def run(self, due: np.ndarray | None, policy: str = "block") -> Run:
        """Run until the plan or `seconds` is used up, then let queued queries finish."""
        pipe = Pipeline(self.spec(None if due is None else due.tolist(), policy),
                        "benchmark scenario")
        pipe.start()
        feed = pipe.nodes["feed"]
        try:
            feed.finished.wait(self.cfg.seconds + 10)
        finally:
            pipe.stop()
        rows = np.array(pipe.nodes["sink"].rows, dtype=float).reshape(-1, 3)
        planned = feed.issued if due is None else int(np.sum(due < self.cfg.seconds))
        return Run(seq=rows[:, 0].astype(int), due=rows[:, 1] - feed.t0,
                   done=rows[:, 2] - feed.t0, planned=planned, issued=feed.issued,
                   dropped=sum(e.dropped + e.expired for e in pipe.edges))

    def measured(self, run: Run) -> np.ndarray:
        """Queries due after warm-up and within the run."""
        return (run.due >= self.cfg.warmup_s) & (run.due < self.cfg.seconds)

    def window_s(self) -> float:
        return self.cfg.seconds - self.cfg.warmup_s


def poisson(rate: float, seconds: float, seed: int) -> np.ndarray:
    """Arrival times of a Poisson process at `rate` per second over `seconds`."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / rate, int(rate * seconds * 1.5) + 20)
    due = np.cumsum(gaps)
    return due[due < seconds]


def latency_result(run: Run, keep: np.ndarray) -> dict:
    lat = run.latency_ms[keep]
    over = np.column_stack([run.due[keep], lat]).round(5).tolist()
    return {**summarize(lat), "samples": thin(lat.round(5).tolist()), "over_time": thin(over)}


def single_stream(load: Load) -> dict:
    run = load.run(None)
    keep = load.measured(run)
    return {**latency_result(run, keep),
            "throughput_qps": float(keep.sum() / load.window_s())}


def multi_stream(load: Load) -> dict:
    cfg = load.cfg
    interval = cfg.interval_ms / 1e3
    rounds = np.arange(0, cfg.seconds, interval)
    run = load.run(np.repeat(rounds, cfg.streams))
    keep = load.measured(run)
    which = run.seq[keep] // cfg.streams
    lat = run.latency_ms[keep]
    slowest = np.zeros(int(which.max()) + 1 if len(which) else 0)
    np.maximum.at(slowest, which, lat)
    slowest = slowest[np.unique(which)]
    over = np.column_stack([rounds[np.unique(which)], slowest]).round(5).tolist()
    return {**summarize(slowest), "rounds": int(len(slowest)),
            "late_rounds": int(np.sum(slowest > cfg.interval_ms)),
            "samples": thin(slowest.round(5).tolist()), "over_time": thin(over)}


def offline(load: Load) -> dict:
    run = load.run(np.zeros(int(load.cfg.seconds * 20000)))
    window = (run.done >= load.cfg.warmup_s) & (run.done < load.cfg.seconds)
    return {"samples_per_s": float(window.sum() / load.window_s()),
            "queries": int(run.issued)}


def at_rate(load: Load, rate: float, seed: int, policy: str = "block") -> tuple[Run, dict]:
    """Poisson arrivals at `rate`: latency, throughput, drops and backlog. `unfinished`
    counts the queries due in the measured window that never completed (waiting, far past
    saturation, or dropped); when none completed, the latencies are None, not 0."""
    arrivals = poisson(rate, load.cfg.seconds, seed)
    run = load.run(arrivals, policy)
    keep = load.measured(run)
    finished = (run.done >= load.cfg.warmup_s) & (run.done < load.cfg.seconds)
    lat = run.latency_ms[keep]
    due = int(((arrivals >= load.cfg.warmup_s) & (arrivals < load.cfg.seconds)).sum())
    figures = summarize(lat)
    if not len(lat):
        figures.update({k: None for k in figures if k.endswith("_ms")})
    return run, {"rate": rate, "throughput_qps": float(finished.sum() / load.window_s()),
                 **figures, "dropped": run.dropped, "backlog": run.planned - run.issued,
                 "unfinished": due - int(keep.sum())}


def server(load: Load, seed: int, saturation: float) -> dict:
    """Bisect the rate between 0 and 1.5x saturation for the highest whose p99 <= bound."""
    cfg = load.cfg
    low, high = 0.0, 1.5 * saturation
    best: dict = {}
    steps = []
    for _ in range(cfg.search_steps):
        rate = (low + high) / 2
        run, figures = at_rate(load, rate, seed)
        met = figures["count"] > 0 and figures["backlog"] == 0 and \
            figures["p99_ms"] <= cfg.bound_ms
        steps.append({"rate": rate, "p99_ms": figures["p99_ms"], "met": met})
        if met:
            low = rate
            best = {**figures, **latency_result(run, load.measured(run))}
        else:
            high = rate
    return {"max_rate_qps": low, **{k: v for k, v in best.items() if k != "rate"},
            "steps": steps}


def offered_load(load: Load, seed: int, saturation: float) -> dict:
    """Each policy at each multiple of saturation: throughput, latency and drops."""
    points = {}
    for policy in ("block", "latest"):
        for share in load.cfg.loads:
            _, figures = at_rate(load, share * saturation, seed, policy)
            points[f"{policy}@{share:g}x"] = {"policy": policy, "load": share, **figures}
    return points


def repeat(fn, load: Load) -> dict:
    """The median of `repeats` runs of fn(load)."""
    return median_over([fn(load) for _ in range(load.cfg.repeats)])


def seeded(fn, load: Load, saturation: float) -> dict:
    """The median of `repeats` runs of fn(load, seed, saturation), run i with seed + i."""
    return median_over([fn(load, load.cfg.seed + i, saturation)
                        for i in range(load.cfg.repeats)])


def run_scenarios(quick: bool, out_dir: Path | None = None, progress=None,
                  config: Config | None = None, bundle: Path | None = None) -> dict:
    """Every scenario on `bundle`, by default the reference bundle exported into out_dir."""
    cfg = config or (QUICK if quick else FULL)
    steps = Steps(progress, "scenarios", 6)
    steps.next("reference bundle")
    if bundle is not None:
        return measure_all(Load(bundle, cfg), steps)
    with reference_in(out_dir) as path:
        return measure_all(Load(path, cfg), steps)


def measure_all(load: Load, steps: Steps) -> dict:
    cfg = load.cfg
    steps.done()
    results: dict = {}
    for name, fn in (("single_stream", single_stream), ("multi_stream", multi_stream),
                     ("offline", offline)):
        steps.next(name.replace("_", "-"))
        results[name] = repeat(fn, load)
        steps.done()
    saturation = results["offline"]["samples_per_s"]
    steps.next("server: rate search")
    results["server"] = seeded(server, load, saturation)
    steps.done()
    steps.next("offered load: block and latest edges")
    results["offered_load"] = {"saturation_qps": saturation,
                               "points": seeded(offered_load, load, saturation)}
    steps.finish()
    return {"config": {**asdict(cfg), "bundle": str(load.bundle), "backend": "ort-cpu",
                       "threads": 1, "seeds": [cfg.seed + i for i in range(cfg.repeats)]},
            "results": results}
