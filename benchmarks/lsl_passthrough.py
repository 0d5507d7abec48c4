"""LSL -> edgert pipeline -> LSL latency, against a raw pylsl hop measured in the same run.

Variants, each fed by the same replayed amplifier (a counter on every channel, so losses show):
  raw_pylsl             amplifier outlet -> this process's inlet (the floor)
  pylsl_relay           ... -> a minimal hand-written pylsl relay process -> inlet (a peer)
  edgert                ... -> `edgert run passthrough` -> inlet (clocksync on, the default)
  edgert_no_clocksync   ... -> the same with processing=[] (timestamps as sent, like the relay)
  edgert_filter_window  ... -> edgert with a 1-40 Hz filter and a 0.5 s / 0.1 s window -> inlet

Usage: python benchmarks/lsl_passthrough.py [--quick] [--seconds S] [--repeats N] [--out FILE]
Prints medians over repeats and the latency each variant adds over the raw hop.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import psutil
import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LSLAPICFG", str(ROOT / "lsl_api.cfg"))

from streams import StreamInfo, local_clock  # noqa: E402
from streams.lsl import Inlet  # noqa: E402
from streams.replay import Replay  # noqa: E402

VARIANTS = ("raw_pylsl", "pylsl_relay", "edgert", "edgert_no_clocksync", "edgert_filter_window")
FILTER_WINDOW = {"name": "filter_window", "nodes": [
    {"name": "source", "node": "lsl_inlet", "params": {"type": "EEG"}},
    {"name": "filter", "node": "filter", "params": {"kind": "bandpass", "freqs": [1, 40]}},
    {"name": "window", "node": "window", "params": {"length": 0.5, "hop": 0.1}},
    {"name": "sink", "node": "lsl_outlet"}]}


def amplifier(name: str, channels: int, rate: float, chunk: int, seconds: float) -> None:
    """Child process: a counter replayed in real time as an LSL EEG stream."""
    n = int(seconds * rate)
    data = np.repeat(np.arange(n, dtype=np.float32)[:, None], channels, axis=1)
    info = StreamInfo.make(name, channels, type="EEG", rate=rate)
    replay = Replay.from_arrays(info, data, chunk_size=chunk)
    replay.start()
    replay.wait()
    time.sleep(0.5)


def relay(source: str, target: str) -> None:
    """Child process: the smallest useful pylsl relay, as a user would write it."""
    import pylsl

    info = pylsl.resolve_byprop("name", source, timeout=10)[0]
    inlet = pylsl.StreamInlet(info, max_buflen=10)
    full = inlet.info()
    out_info = pylsl.StreamInfo(target, full.type(), full.channel_count(),
                                full.nominal_srate(), full.channel_format())
    outlet = pylsl.StreamOutlet(out_info)
    buf = np.empty((1024, full.channel_count()), np.float32)
    while True:
        data, stamps = inlet.pull_chunk(1.0, 1024, dest_obj=buf, min_samples=1, as_numpy=True)
        if len(stamps) == 1:
            outlet.push_chunk(data, float(stamps[0]))
        elif len(stamps):
            outlet.push_chunk(data, stamps.tolist())


def start_middle(variant: str, source: str, target: str, workdir: Path):
    """The process between amplifier and receiver, or None for the raw hop."""
    if variant == "raw_pylsl":
        return None
    if variant == "pylsl_relay":
        proc = mp.get_context("spawn").Process(target=relay, args=(source, target), daemon=True)
        proc.start()
        return proc
    pipeline = "passthrough"
    if variant == "edgert_filter_window":
        pipeline = str(workdir / "filter_window.yaml")
        Path(pipeline).write_text(yaml.safe_dump(FILTER_WINDOW))
    extra = ["--set", "source.processing=[]"] if variant == "edgert_no_clocksync" else []
    return subprocess.Popen(["edgert", "run", pipeline, "--quiet", "--set",
                             f"source.name={source}", "--set", f"sink.name={target}", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc) -> None:
    if proc is None:
        return
    if isinstance(proc, subprocess.Popen):
        proc.terminate()
        proc.wait(10)
    else:
        proc.kill()
        proc.join(10)


def receive(inlet: Inlet, seconds: float, warmup: float) -> list[tuple]:
    """Every pull after the warm-up: (receive time, counters, timestamps)."""
    pulls = []
    start = time.monotonic()
    while time.monotonic() - start < warmup + seconds:
        chunk = inlet.pull(0.5)
        if chunk is None:
            continue
        now = local_clock()
        if time.monotonic() - start >= warmup:
            pulls.append((now, chunk.data[:, 0].copy(), chunk.timestamps))
    return pulls


def measure(pulls: list[tuple], chunk: int, windowed: bool) -> tuple[np.ndarray, int]:
    """Latency of each sample that completes a unit, and the units lost.

    A unit is a source chunk (its last sample is due when the whole chunk is pushed; a pull
    may return part of it, which says nothing about latency) or, after a Window, a window.
    """
    if not pulls:
        return np.zeros(0), -1
    recv = np.concatenate([np.full(len(v), t) for t, v, _ in pulls])
    values = np.concatenate([v for _, v, _ in pulls])
    stamps = np.concatenate([s for _, _, s in pulls])
    if windowed:  # filtered values are no counters: a window ends where time steps back
        ends = np.r_[np.diff(stamps) < 0, True]
        steps = np.diff(stamps[ends])
        lost = int(np.sum(np.round(steps / np.median(steps)) - 1)) if len(steps) else 0
    else:
        ends = (values + 1) % chunk == 0
        lost = int(values[-1] - values[0] + 1 - len(values))
    return recv[ends] - stamps[ends], lost


def run_once(variant: str, channels: int, rate: float, chunk: int, seconds: float,
             workdir: Path) -> dict:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    target = f"{name}-out"
    amp = mp.get_context("spawn").Process(target=amplifier, daemon=True,
                                          args=(name, channels, rate, chunk, seconds + 6))
    amp.start()
    middle = start_middle(variant, name, target, workdir)
    try:
        inlet = Inlet(name=name if middle is None else target, processing=())
        if not inlet.open(15.0):
            raise RuntimeError(f"{variant}: output stream never appeared")
        usage = psutil.Process(middle.pid) if middle is not None else None
        before = usage.cpu_times() if usage else None
        t0 = time.monotonic()
        pulls = receive(inlet, seconds, warmup=1.0)
        wall = time.monotonic() - t0
        cpu = 0.0
        if usage:
            after = usage.cpu_times()
            cpu = 100 * (after.user + after.system - before.user - before.system) / wall
        inlet.close()
    finally:
        stop(middle)
        amp.kill()
        amp.join(10)
    lat, missing = measure(pulls, chunk, variant == "edgert_filter_window")
    p50, p90, p99 = np.percentile(lat, [50, 90, 99]) * 1e3 if len(lat) else (np.nan,) * 3
    return {"p50_ms": float(p50), "p90_ms": float(p90), "p99_ms": float(p99),
            "max_ms": float(lat.max() * 1e3) if len(lat) else float("nan"),
            "units": int(len(lat)), "lost": missing,
            "cpu_percent": cpu}


def median_of(runs: list[dict]) -> dict:
    keys = ("p50_ms", "p90_ms", "p99_ms", "max_ms", "units", "lost", "cpu_percent")
    return {k: float(np.median([r[k] for r in runs])) for k in keys}


def table(results: dict) -> Table:
    t = Table(title="LSL hop latency (median of repeats); added = variant - raw_pylsl",
              title_justify="left")
    for col in ("stream", "chunk", "variant", "p50 ms", "p99 ms", "added p50", "added p99",
                "cpu %", "lost"):
        t.add_column(col, justify="left" if col in ("stream", "variant") else "right")
    for key, variants in results.items():
        stream, chunk = key.rsplit("/chunk", 1)
        raw = variants["raw_pylsl"]
        for variant, r in variants.items():
            added = variant != "raw_pylsl"
            t.add_row(stream, chunk, variant, f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}",
                      f"{r['p50_ms'] - raw['p50_ms']:+.3f}" if added else "",
                      f"{r['p99_ms'] - raw['p99_ms']:+.3f}" if added else "",
                      f"{r['cpu_percent']:.1f}" if added else "", f"{r['lost']:.0f}")
        t.add_section()
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat of 2 s each")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write results JSON here")
    args = parser.parse_args()
    seconds, repeats = (2.0, 1) if args.quick else (args.seconds, args.repeats)
    streams = [(22, 250.0), (64, 1000.0)]
    console = Console()
    runs: dict[str, dict[str, list]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(repeats):
            for channels, rate in streams:
                for chunk in (1, 32):
                    key = f"{channels}ch x {rate:g} Hz/chunk{chunk}"
                    for variant in VARIANTS:
                        r = run_once(variant, channels, rate, chunk, seconds, Path(tmp))
                        runs.setdefault(key, {}).setdefault(variant, []).append(r)
                        console.log(f"repeat {rep + 1}/{repeats} {key} {variant}: "
                                    f"p50 {r['p50_ms']:.3f} ms p99 {r['p99_ms']:.3f} ms "
                                    f"lost {r['lost']} cpu {r['cpu_percent']:.1f}%")
    results = {key: {v: median_of(rs) for v, rs in variants.items()}
               for key, variants in runs.items()}
    console.print(table(results))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"seconds": seconds, "repeats": repeats,
                                        "results": results, "runs": runs}, indent=2))
        console.print(f"written {args.out}")


if __name__ == "__main__":
    main()
