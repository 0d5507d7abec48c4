"""Soaks of the live method pipelines: a user's streams replayed in a loop, faster than real
time, through `edgert run` in its own process, for half an hour (`edgert bench reliability`).

The process's resident memory, threads, sockets and open files are sampled through the run;
growth counts from the end of the warm-up (the first quarter: buffers, caches and the ONNX
Runtime arena fill first) to the end. The counters are consistent when every chunk put on an
edge is accounted for at its consumer: processed, quarantined, dropped, expired or still queued.
"""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import psutil

from edgert import pipelines
from edgert.benchmarks import plots
from edgert.benchmarks.suite import machine
from edgert.benchmarks.pipelines import fed_run
from edgert.runtime.methods import for_pipeline
from edgert.streams.replay import Replay
from edgert.runtime.progress import progress_bar

SPEED = 8.0  # times real time: both keep up at this pace on 2 cores, dropping nothing
LAP_S = 300.0  # seconds of simulated streams, replayed in a loop
SAMPLE_S = 5.0


def usage(proc: psutil.Process) -> dict:
    """What a leak would grow: memory, threads, sockets, open file descriptors."""
    return {"rss_mb": proc.memory_info().rss / 2**20, "threads": proc.num_threads(),
            "sockets": len(proc.net_connections(kind="all")), "fds": proc.num_fds()}


def unaccounted(report: dict) -> dict[str, int]:
    """Per node, chunks that reached its input edges but are neither processed, quarantined,
    dropped, expired nor still queued (0 everywhere when the counters agree)."""
    arrived: dict[str, int] = {}
    for e in report["edges"]:
        node = e["edge"].split(" -> ")[1].split(".")[0]
        arrived[node] = arrived.get(node, 0) + e["chunks"] - e["queued"] - e["dropped"] \
            - e["expired"]
    return {node: n - report["nodes"][node]["processed"] - report["nodes"][node]["quarantined"]
            for node, n in arrived.items()}


def soak_pipeline(name: str, seconds: float, speed: float = SPEED, progress=None) -> dict:
    """Run pipeline `name` (a method's, with simulated sources) for `seconds` of wall time at
    `speed` times real time; resources over time and the report's counters. With a rich
    `progress`, a bar of its own counts the seconds."""
    task = progress.add_task(f"soak: {name} (seconds)", total=seconds) if progress else None
    method = for_pipeline(name)
    players, overrides = method.sources(f"edgert-soak-{uuid.uuid4().hex[:6]}", LAP_S)
    players = [Replay(p.recordings, speed=speed, chunk_size=p.chunk_size, loop=True)
               for p in players]
    samples: list[dict] = []

    def work(proc) -> None:
        samples.extend(watch(psutil.Process(proc.pid), players, seconds, progress, task))

    report = fed_run(pipelines.find(name), overrides, players, 60.0, work)
    if "skipped" in report:
        return report
    rates = {r.info.name: r.info.rate for p in players for r in p.recordings}
    sent = {k: v for p in players for k, v in p.pushed.items()}
    played = max(n / rates[k] for k, n in sent.items() if rates[k] > 0)
    return summary(name, seconds, speed, samples, report, sent, played)


def watch(proc: psutil.Process, players: list[Replay], seconds: float, progress, task
          ) -> list[dict]:
    """Start the players and sample the pipeline process every SAMPLE_S until `seconds`."""
    for player in players:
        player.start()
    samples, t0 = [], time.monotonic()
    while (elapsed := time.monotonic() - t0) < seconds:
        samples.append({"t_s": round(elapsed, 1), **usage(proc)})
        if progress is not None:
            progress.update(task, completed=elapsed)
        time.sleep(min(SAMPLE_S, max(seconds - elapsed, 0.01)))
    samples.append({"t_s": round(time.monotonic() - t0, 1), **usage(proc)})
    return samples


def summary(name: str, seconds: float, speed: float, samples: list[dict], report: dict,
            sent: dict[str, int], played: float) -> dict:
    warm = next(s for s in samples if s["t_s"] >= seconds / 4)
    end = samples[-1]
    missing = {k: v for k, v in unaccounted(report).items() if v}
    return {"pipeline": name, "seconds": seconds, "speed": speed,
            "data_seconds": played, "samples_sent": sent,
            "processed": {n: r["processed"] for n, r in report["nodes"].items()},
            "rss_mb_warm": warm["rss_mb"], "rss_mb_end": end["rss_mb"],
            "rss_growth": (end["rss_mb"] - warm["rss_mb"]) / warm["rss_mb"],
            **{f"{k}_leaked": end[k] - warm[k] for k in ("threads", "sockets", "fds")},
            "dropped": report["dropped"], "quarantined": report["quarantined"],
            "clock_faults": report["clock_faults"], "end_to_end": report["end_to_end"],
            "unaccounted_chunks": sum(abs(v) for v in missing.values()),
            "unaccounted": missing,
            "shortfalls": report.get("shortfalls", []), "samples": samples}


def main() -> None:
    """`python -m edgert.benchmarks.soak [PIPELINE...] [--minutes M] --out FILE.json`."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("pipelines", nargs="*", default=["bci", "car"])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results = {}
    with progress_bar() as progress:
        for name in args.pipelines:
            progress.console.print(f"soaking {name} for {args.minutes:g} min at {SPEED:g}x "
                                   "real time")
            results[name] = soak_pipeline(name, args.minutes * 60, progress=progress)
            args.out.write_text(json.dumps({"machine": machine(), "results": results},
                                           indent=1))
    print(f"results written to {args.out}")
    print(f"figure written to {plots.soak(results, args.out.with_suffix('.png'))}")


if __name__ == "__main__":
    main()
