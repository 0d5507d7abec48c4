"""`edgert bench reliability`: what edgert survives, refuses and loses, in numbers.

- faults: an LSL source process killed and restarted, and a ZeroMQ one; a burst of malformed
  frames; a sender whose clock runs ahead; `edgert record` killed mid-recording. Each is
  survived when the pipeline keeps delivering after it, and loses nothing that was sent
  before it, from the first sample it received (counted sample by sample: the sources send
  counters).
- reject cost: the time a malformed frame costs the `zmq_in` source, from how much later a
  good chunk arrives behind K bad ones than behind none, in the same run.
- hostile inputs: thousands of seeded mutations of a good wire message (fields dropped,
  retyped, non-finite times, unknown dtypes, error keys, huge declared shapes, cut payloads);
  how many were refused with a WireError, decoded, or crashed (anything else), and the
  largest memory one decode took. Then the same kind of mutations sent live to a relay
  pipeline with a good chunk after every ten: good chunks lost, the source alive.
- bad-frame memory: resident memory after 150 NaN frames of 4 MiB are quarantined.
- scaling (scaling.py): cost and latency against channels, rate, streams and pipelines.
- soak: a relay pipeline fed as fast as it takes for a while; resident memory at the start and
  the end, threads and open files before and after. Then the live method pipelines `bci` and
  `car` as long each, their users' streams replayed faster than real time (soak.py).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path

import msgpack
import numpy as np
import psutil
import zmq

from edgert.benchmarks.scaling import run_scaling
from edgert.benchmarks.soak import soak_pipeline
from edgert.benchmarks.suite import machine
from edgert.devices.heap import give_back
from edgert.runtime import spec as specs
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock, wire
from edgert.streams.xdf_read import read_xdf
from edgert.streams.zmq_link import Puller, free_endpoint


@dataclass(frozen=True)
class Config:
    hostile: int = 5000
    reject_k: int = 100
    reject_repeats: int = 30
    soak_s: float = 60.0
    seed: int = 0


QUICK = Config(hostile=1000, reject_repeats=10, soak_s=20.0)
FULL = Config(hostile=10000, soak_s=1800.0)

SOURCE = """
import sys, time, numpy as np, pylsl, zmq, msgpack
kind, name, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
from edgert.streams import Chunk, StreamInfo, local_clock, wire
info = StreamInfo.make(name, 1, rate=500.0, source_id=name)
if kind == "lsl":
    from edgert.streams.lsl import Outlet
    out = Outlet(info)
else:
    out = zmq.Context.instance().socket(zmq.PUSH)
    out.connect(sys.argv[4])
k = start
while True:
    chunk = Chunk(np.arange(k, k + 10, dtype=np.float32)[:, None],
                  local_clock() - np.arange(10)[::-1] / 500.0, info, k // 10)
    out.push(chunk) if kind == "lsl" else out.send_multipart(wire.encode(chunk))
    k += 10
    print(k, flush=True)
    time.sleep(0.02)
"""


def _pipeline(name: str, source: dict, sink: str) -> Pipeline:
    raw = {"name": f"reliability-{name}", "nodes": [
        {"name": "src", **source},
        {"name": "out", "node": "zmq_out", "params": {"endpoint": sink, "pattern": "push"}}]}
    return Pipeline(specs.parse(raw, name))


class Counted:
    """Counter values received on a PULL socket, from a thread."""

    def __init__(self, endpoint: str):
        self.puller = Puller(endpoint)
        self.values: set[int] = set()
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while self.running:
            chunk = self.puller.pull(0.1)
            if chunk is not None:
                self.values.update(int(v) for v in chunk.data[:, 0])

    def wait_for(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while len(self.values) < n and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(self.values) >= n

    def close(self) -> None:
        self.running = False
        self.thread.join(2)
        self.puller.close()


def _spawn(kind: str, name: str, start: int, endpoint: str = "") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SOURCE, kind, name, str(start), endpoint],
                            stdout=subprocess.PIPE, text=True)


def _sent(proc: subprocess.Popen) -> int:
    """Kill the source; the last counter it reported sending."""
    os.kill(proc.pid, signal.SIGKILL)
    lines = proc.communicate()[0].split()
    return int(lines[-1]) if lines else 0


def source_restart(kind: str) -> dict:
    """A source process killed and restarted: survived if the pipeline delivers the restarted
    source's data; lost = counters sent before the kill that never arrived."""
    name = f"fault-{kind}-{os.getpid()}-{time.monotonic_ns()}"
    sink, src_endpoint = free_endpoint(), free_endpoint()
    source = ({"node": "lsl_inlet", "params": {"name": name, "wait": 20}} if kind == "lsl" else
              {"node": "zmq_in", "params": {"endpoint": src_endpoint, "pattern": "pull"}})
    got = Counted(sink)
    first = _spawn(kind, name, 0, src_endpoint)
    pipe = _pipeline(name, source, sink)
    try:
        pipe.start()
        got.wait_for(200, 20)
        sent = _sent(first)
        time.sleep(1.0)  # what was in flight arrives
        lost = len(set(range(min(got.values, default=0), sent)) - got.values)
        second = _spawn(kind, name, 10**6, src_endpoint)
        survived = got.wait_for(len(got.values) + 200, 30)
        _sent(second)
    finally:
        pipe.stop()
        got.close()
    report = pipe.report()
    return {"survived": bool(survived), "sent_before_fault": sent, "lost_before_fault": lost,
            "reconnects": report["nodes"]["src"].get("reconnects", 0)}


def _relay() -> tuple[Pipeline, str, str]:
    src, sink = free_endpoint(), free_endpoint()
    return _pipeline("relay", {"node": "zmq_in", "params": {"endpoint": src,
                                                           "pattern": "pull"}}, sink), src, sink


def _good(seq: int, ahead: float = 0.0) -> list:
    info = StreamInfo.make("rel", 8, rate=250.0)
    return wire.encode(Chunk(np.zeros((10, 8), np.float32),
                             local_clock() + ahead - np.arange(10)[::-1] / 250.0, info, seq))


def bad_and_clock(cfg: Config) -> tuple[dict, dict, dict]:
    """A malformed burst, a clock ahead, and the reject cost, through one relay pipeline."""
    pipe, src, sink = _relay()
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.connect(src)
    header, payload = [bytes(f) for f in _good(0)]
    bad = [header, payload[:-4]]
    with Puller(sink) as out:
        pipe.start()
        try:
            after = {0: [], cfg.reject_k: []}
            for r in range(cfg.reject_repeats * 2):
                k = cfg.reject_k if r % 2 else 0
                for _ in range(k):
                    push.send_multipart(bad)
                t0 = time.perf_counter()
                push.send_multipart(_good(r))
                out.pull(timeout=10)
                after[k].append(time.perf_counter() - t0)
                time.sleep(0.005)
            for _ in range(1000):
                push.send_multipart(bad)
            push.send_multipart(_good(10**5))
            burst_ok = out.pull(timeout=10) is not None
            for seq in range(20):
                push.send_multipart(_good(seq, ahead=30.0 if seq % 2 else 0.0))
            arrived = sum(out.pull(timeout=10) is not None for _ in range(20))
        finally:
            push.close(linger=0)
            pipe.stop()
    report = pipe.report()
    rejected = report["nodes"]["src"]["quarantined"]
    cost = (np.median(after[cfg.reject_k]) - np.median(after[0])) / cfg.reject_k
    per = np.array(after[cfg.reject_k]) - np.median(after[0])
    reject = {"k": cfg.reject_k, "good_after_none_ms_p50": float(np.median(after[0]) * 1e3),
              f"good_after_{cfg.reject_k}_bad_ms_p50":
                  float(np.median(after[cfg.reject_k]) * 1e3),
              "reject_us_p50": float(max(cost, 0.0) * 1e6),
              "reject_us_p99": float(max(np.percentile(per, 99), 0.0) / cfg.reject_k * 1e6)}
    burst = {"survived": bool(burst_ok), "rejected_counted": rejected,
             "expected": cfg.reject_k * cfg.reject_repeats + 1000,
             "counted_once": report["quarantined"] == {"src": {"wire": rejected}}}
    clock = {"survived": arrived == 20, "clock_faults": report["clock_faults"],
             "expected": 10, "p99_ms": report["end_to_end"]["p99_ms"]}
    return reject, burst, clock


def recorder_killed(tmp: Path) -> dict:
    """`edgert record` killed with SIGKILL mid-recording: the file reads to its last chunk."""
    name = f"rec-{os.getpid()}-{time.monotonic_ns()}"
    source = _spawn("lsl", name, 0)
    path = tmp / "killed.xdf"
    rec = subprocess.Popen([sys.executable, "-m", "edgert.cli", "record", str(path),
                            "-s", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(6)
    os.kill(rec.pid, signal.SIGKILL)
    rec.wait()
    sent = _sent(source)
    streams = read_xdf(path)
    kept = len(streams[0]) if streams else 0
    return {"survived": kept > 0, "samples_kept": kept, "samples_sent": sent}


CHOICES = [None, True, -1, 0, 2**40, 2**62, 2**63, 2**64 - 1, 1.5, float("nan"), float("inf"),
           -float("inf"), 1e300, 1e-320, "x", "fLoat32", "float128", "string", b"\x00", [],
           [0, 2**63], [2**40, 0], [1] * 40, [float("nan")] * 10, [["s", 0.0, float("nan")]],
           {"a": 1}]


def mutant(rng: np.random.Generator, header: dict, payload: bytes) -> list[bytes]:
    """A good message with one to three header or stream fields dropped or replaced (an
    `error` key among them), and sometimes its payload cut."""
    stream = dict(header["stream"])
    h = dict(header, stream=stream)
    for _ in range(int(rng.integers(1, 4))):
        where = h if rng.random() < 0.6 else stream
        key = rng.choice(sorted(where) + ["timestamps", "rate", "trace", "error"])
        if rng.random() < 0.3:
            where.pop(key, None)
        else:
            where[key] = CHOICES[int(rng.integers(len(CHOICES)))]
    body = payload[:int(rng.integers(0, len(payload) + 1))] if rng.random() < 0.3 else payload
    return [msgpack.packb(h), body]


def hostile(cfg: Config) -> dict:
    """Seeded mutations of a good message through `wire.decode`."""
    rng = np.random.default_rng(cfg.seed)
    header = msgpack.unpackb(_good(0)[0])
    payload = bytes(_good(0)[1])
    outcome = {"refused": 0, "decoded": 0, "crashed": 0}
    peak_max = 0
    for _ in range(cfg.hostile):
        frames = mutant(rng, header, payload)
        tracemalloc.start()
        try:
            wire.decode(frames)
            outcome["decoded"] += 1
        except wire.WireError:
            outcome["refused"] += 1
        except Exception:
            outcome["crashed"] += 1
        finally:
            peak_max = max(peak_max, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    return {"tried": cfg.hostile, **outcome, "peak_bytes_max": peak_max}


def hostile_live(cfg: Config) -> dict:
    """The same mutations sent to a running relay pipeline, a good chunk after every ten:
    how many good chunks were lost, whether the source lived, and what it counted."""
    rng = np.random.default_rng(cfg.seed + 1)
    header = msgpack.unpackb(_good(0)[0])
    payload = bytes(_good(0)[1])
    pipe, src, sink = _relay()
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.connect(src)
    good = 0
    with Puller(sink) as out:
        pipe.start()
        try:
            got = []
            for k in range(cfg.hostile):
                push.send_multipart(mutant(rng, header, payload))
                if k % 10 == 9:
                    push.send_multipart(_good(good))
                    good += 1
                if k % 500 == 499:  # keep up: nothing is dropped for being late
                    while (c := out.pull(timeout=0)) is not None:
                        got.append(c)
            while (c := out.pull(timeout=2)) is not None:
                got.append(c)
        finally:
            push.close(linger=0)
            pipe.stop()
    report = pipe.report()
    seqs = {c.seq for c in got if c.info.name == "rel"}
    return {"tried": cfg.hostile, "good_sent": good, "good_lost": len(set(range(good)) - seqs),
            "delivered": len(got), "source_alive": not pipe.scheduler.died and not pipe.fatal,
            "quarantined": report["quarantined"].get("src", {}),
            "shortfalls": pipe.shortfalls(report)}


def bad_frame_memory(frames: int = 150, mib: int = 4) -> dict:
    """Resident memory after bursts of `frames` NaN frames of `mib` MiB through a relay (each
    quarantined, a bounded copy kept). The pipeline keeps its heap at its high-water mark
    (`edgert.devices.heap`), so a burst's growth is the frames in flight at once, which the
    next burst reuses (it adds only where its own peak is higher); once the heap is given back
    only what is still referenced (the kept copies) stays."""
    pipe, src, sink = _relay()
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.connect(src)
    n = mib * (1 << 20) // (4 * 1024)
    info = StreamInfo.make("big", 1024, rate=250.0)
    me = psutil.Process()
    rss = []
    with Puller(sink) as out:
        pipe.start()
        try:
            push.send_multipart(_good(0))
            out.pull(timeout=10)
            give_back()
            rss.append(me.memory_info().rss)
            for burst in (1, 2):
                for _ in range(frames):
                    nan = np.full((n, 1024), np.nan, np.float32)
                    push.send_multipart(wire.encode(Chunk(
                        nan, local_clock() - np.arange(n)[::-1] / 250.0, info, 0)))
                push.send_multipart(_good(burst))
                arrived = out.pull(timeout=30) is not None
                time.sleep(0.5)
                rss.append(me.memory_info().rss)
            give_back()
            rss.append(me.memory_info().rss)
        finally:
            push.close(linger=0)
            pipe.stop()
    kept = pipe.scheduler.quarantine.kept
    mb = [round((r - rss[0]) / 2**20, 1) for r in rss[1:]]
    return {"frames": frames, "frame_mib": mib, "good_after": arrived,
            "rss_growth_first_burst_mb": mb[0], "rss_growth_second_burst_mb": round(
                mb[1] - mb[0], 1), "rss_held_after_give_back_mb": mb[2],
            "kept_chunks": len(kept),
            "kept_mb": round(sum(k[3].data.nbytes + k[3].timestamps.nbytes
                                 for k in kept) / 2**20, 2)}


def soak(cfg: Config) -> dict:
    """The relay pipeline fed as fast as it takes for `soak_s`: memory, threads, files."""
    me = psutil.Process()
    threads0, files0 = threading.active_count(), len(me.open_files()) + me.num_fds()
    pipe, src, sink = _relay()
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.connect(src)
    with Puller(sink) as out:
        pipe.start()
        rss = []
        sent = 0
        end = time.monotonic() + cfg.soak_s
        warm = time.monotonic() + cfg.soak_s / 4  # ring buffers and caches fill first
        while time.monotonic() < end:
            push.send_multipart(_good(sent))
            sent += 1
            while out.pull(timeout=0) is not None:
                pass
            if sent % 500 == 0 and time.monotonic() > warm:
                rss.append(me.memory_info().rss)
        while out.pull(timeout=1.0) is not None:  # what is still queued goes through
            pass
        push.close(linger=0)
        pipe.stop()
    time.sleep(0.5)
    report = pipe.report()
    growth = (rss[-1] - rss[0]) / rss[0] if len(rss) > 1 else 0.0
    return {"seconds": cfg.soak_s, "chunks": sent, "processed": report["nodes"]["out"]["processed"],
            "rss_growth": float(growth), "rss_mb_end": rss[-1] / 2**20 if rss else None,
            "threads_leaked": threading.active_count() - threads0,
            "fds_leaked": len(me.open_files()) + me.num_fds() - files0}


def run_reliability(quick: bool, out_dir: Path | None = None, progress=None) -> dict:
    cfg = QUICK if quick else FULL
    steps = [*FAULT_STEPS, "scaling", "soak", "bci soak", "car soak"]
    task = progress.add_task("reliability", total=len(steps)) if progress else None

    begun: list[str] = []

    def step(what: str) -> None:
        """A step begins: the one before it is done."""
        if progress:
            if begun:
                progress.advance(task)
            progress.update(task, description=f"reliability: {what}")
        begun.append(what)

    results = faults_and_hostile(cfg, step)
    step("scaling")
    results["scaling"] = run_scaling(quick, progress, task)
    step("soak")
    results["soak"] = soak(cfg)
    results["soak_pipelines"] = {}
    for name in ("bci", "car"):
        step(f"{name} soak")
        results["soak_pipelines"][name] = soak_pipeline(name, cfg.soak_s, progress=progress)
    _advance(progress, task)
    soaked = [r for r in results["soak_pipelines"].values() if "skipped" not in r]
    results["summary"] = {
        **summary(results),
        **{f"largest_{k}_held": v for k, v in results["scaling"]["largest_held"].items()},
        "soak_rss_growth": results["soak"]["rss_growth"],
        "soak_pipelines": len(soaked),
        "soak_pipelines_rss_growth_max": max((r["rss_growth"] for r in soaked), default=None),
        "soak_pipelines_leaked": sum(r[f"{k}_leaked"] for r in soaked
                                     for k in ("threads", "sockets", "fds")),
        "soak_pipelines_unaccounted": sum(r["unaccounted_chunks"] for r in soaked)}
    return {"config": asdict(cfg), "results": results}


FAULT_STEPS = ["lsl source restarted", "zmq source restarted", "malformed burst, clock ahead, "
               "reject cost", "recorder killed", "hostile inputs", "hostile frames live",
               "bad-frame memory"]


def faults_and_hostile(cfg: Config, step=lambda what: None) -> dict:
    """Every fault and hostile input (minutes; the scaling and soaks take hours); `step` is
    told each one as it starts."""
    results: dict = {"faults": {}}
    faults = results["faults"]
    step(FAULT_STEPS[0])
    faults["lsl_source_restarted"] = source_restart("lsl")
    step(FAULT_STEPS[1])
    faults["zmq_source_restarted"] = source_restart("zmq")
    step(FAULT_STEPS[2])
    results["reject"], faults["malformed_burst"], faults["clock_ahead"] = bad_and_clock(cfg)
    step(FAULT_STEPS[3])
    with tempfile.TemporaryDirectory() as tmp:
        faults["recorder_killed"] = recorder_killed(Path(tmp))
    step(FAULT_STEPS[4])
    results["hostile"] = hostile(cfg)
    step(FAULT_STEPS[5])
    results["hostile_live"] = hostile_live(cfg)
    step(FAULT_STEPS[6])
    results["bad_frame_memory"] = bad_frame_memory()
    return results


def summary(results: dict) -> dict:
    """The headline figures of the faults and hostile inputs."""
    faults = results["faults"].values()
    return {"faults_survived": sum(f["survived"] for f in faults), "faults": len(faults),
            "lost_before_fault": sum(f.get("lost_before_fault", 0) for f in faults),
            "hostile_tried": results["hostile"]["tried"],
            "hostile_crashed": results["hostile"]["crashed"],
            "hostile_live_good_lost": results["hostile_live"]["good_lost"],
            "bad_frame_rss_held_mb":
                results["bad_frame_memory"]["rss_held_after_give_back_mb"],
            "reject_us_p99": results["reject"]["reject_us_p99"]}


def _advance(progress, task) -> None:
    if progress:
        progress.advance(task)


def main() -> None:
    """`python -m edgert.benchmarks.reliability [--quick] --out FILE.json`: the faults and
    hostile inputs alone, without the scaling and the soaks."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    cfg = QUICK if args.quick else FULL
    print(f"faults and hostile inputs: sources killed and restarted, {cfg.hostile} mutations "
          "decoded and sent live, bad-frame memory (about two minutes)", flush=True)
    started = time.monotonic()
    results = faults_and_hostile(cfg, lambda what: print(
        f"  {what} ({time.monotonic() - started:.0f} s)", flush=True))
    results["summary"] = summary(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"config": asdict(cfg), "machine": machine(),
                                    "results": results}, indent=1, allow_nan=False))
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
