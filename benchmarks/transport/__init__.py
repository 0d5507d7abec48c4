"""The `transport` suite: the latency a hop adds between a live source and its consumer.

Every variant is fed by the same replayed amplifier (a counter on every channel) and read by
the same receiver in this process; figures are medians over repeats run in one session.

  raw_pylsl             LSL outlet -> inlet (the floor for LSL)
  edgert                ... -> `edgert run passthrough` -> inlet (clocksync on, the default)
  timeflux              ... -> Timeflux's LSL Receive -> Send graph -> inlet
  mne_lsl               ... -> MNE-LSL StreamLSL -> pylsl outlet -> inlet
  raw_pyzmq             pyzmq PUB -> SUB, chunks encoded with streams.wire (the floor for ZMQ)
  edgert_zmq            PUB -> `edgert run` zmq_in -> zmq_out -> SUB
  pylsl_relay           LSL -> a minimal hand-written pylsl relay -> inlet          (full mode)
  edgert_no_clocksync   edgert with processing=[] (timestamps as sent)             (full mode)
  edgert_filter_window  edgert with a 1-40 Hz filter and a 0.5 s / 0.1 s window    (full mode)

Each variant with a middle process also reports `added`: per unit, its receipt through the
middle minus its receipt by a second receiver fed by the same source directly in the same run
(all but edgert_filter_window, whose windows hold no counters).

Timeflux and MNE-LSL run from their own virtual environments (benchmarks/setup_peers.sh);
where one is missing its entry is {"skipped": reason}.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from edgert.benchmarks.common import Steps, median_over
from edgert.benchmarks.transport.measure import (Units, added, figures, lsl_units,
                                              window_units, zmq_units)
from edgert.benchmarks.transport.middle import (LSL_CONFIG, PEERS_DIR, TIMEFLUX_RATE_HZ, Middle,
                                            peer_problem, start_middle)
from edgert.benchmarks.transport.receive import LslReceiver, ZmqReceiver, collect, wait_first
from edgert.benchmarks.transport.source import Source, start_source
from edgert.streams import local_clock

VARIANTS = ("raw_pylsl", "edgert", "timeflux", "mne_lsl", "raw_pyzmq", "edgert_zmq")
EXTRA_VARIANTS = ("pylsl_relay", "edgert_no_clocksync", "edgert_filter_window")
ZMQ_VARIANTS = ("raw_pyzmq", "edgert_zmq")
RAW_VARIANTS = ("raw_pylsl", "raw_pyzmq")
PEER_VARIANTS = ("timeflux", "mne_lsl")
UNPAIRED = RAW_VARIANTS + ("edgert_filter_window",)
STREAMS = ((22, 250.0), (64, 1000.0))
CHUNKS = (1, 32)
# A p99 needs enough chunks: at 250 Hz in chunks of 32 a few seconds hold ~30, whose p99 is
# their maximum; each run lasts long enough for this many.
MIN_UNITS = 100
WARMUP_S = 1.0
START_TIMEOUT_S = 30.0

__all__ = ["VARIANTS", "EXTRA_VARIANTS", "plan", "run_seconds", "run_transport", "stream_key"]


def stream_key(channels: int, rate: float, chunk: int) -> str:
    return f"{channels}x{rate:g}/chunk{chunk}"


def plan(quick: bool, variants: Sequence[str] | None, seconds: float | None) -> dict:
    """The config of a run: quick is one repeat of the six variants on 22x250, chunk 1; full
    adds 64x1000, chunks of 32 and the extra variants (diagnostics, one repeat)."""
    chosen = list(variants or (VARIANTS if quick else VARIANTS + EXTRA_VARIANTS))
    unknown = set(chosen) - set(VARIANTS + EXTRA_VARIANTS)
    if unknown:
        raise ValueError(f"unknown transport variants {sorted(unknown)}; choose from "
                         f"{list(VARIANTS + EXTRA_VARIANTS)}")
    streams = STREAMS[:1] if quick else STREAMS
    return {"streams": [{"channels": c, "rate": r} for c, r in streams],
            "chunk_sizes": list(CHUNKS[:1] if quick else CHUNKS),
            "seconds": seconds or (2.0 if quick else 3.0), "min_units": MIN_UNITS,
            "repeats": 1 if quick else 3, "extra_repeats": 1,
            "warmup_s": WARMUP_S, "variants": chosen,
            "timeflux_graph_rate_hz": TIMEFLUX_RATE_HZ,
            "latency": "receipt time in the receiver minus the source timestamp of the sample "
                       "that completes each source chunk (LSL local_clock)",
            "cpu_percent": "the middle process tree, % of one core; 0 for the raw hops"}


def run_transport(quick: bool, out_dir: Path | None = None, peers_dir: Path = PEERS_DIR,
                  progress=None, *,
                  variants: Sequence[str] | None = None,
                  seconds: float | None = None) -> dict:
    """Run the suite; returns {"config", "results": {stream/chunk: {variant: figures}}}.

    `progress` is the shared rich Progress (or None); `variants` and `seconds` narrow a
    run (tests). out_dir, when given, receives transport.json and every middle process's log.
    """
    config = plan(quick, variants, seconds)
    os.environ["LSLAPICFG"] = str(LSL_CONFIG)  # this process's inlets, and every child's
    skipped = {v: p for v in config["variants"] if v in PEER_VARIANTS
               and (p := peer_problem(v, Path(peers_dir)))}
    with _workdir(out_dir) as work:
        runs = _repeat(config, skipped, work, Path(peers_dir), progress)
    results = {key: {v: _result(runs[key].get(v, []), skipped.get(v))
                     for v in config["variants"]} for key in runs}
    report = {"config": config, "results": results}
    if out_dir is not None:
        (Path(out_dir) / "transport.json").write_text(json.dumps(report, indent=1))
    return report


def _workdir(out_dir: Path | None):
    """Where pipeline YAMLs and middle-process logs go: out_dir/transport-logs, or a temp dir."""
    if out_dir is None:
        return tempfile.TemporaryDirectory(prefix="edgert-transport-")
    work = Path(out_dir).resolve() / "transport-logs"
    work.mkdir(parents=True, exist_ok=True)
    return contextlib.nullcontext(str(work))


def run_seconds(config: dict, rate: float, chunk: int) -> float:
    """How long one run measures: `seconds`, or longer where that holds under `min_units`
    source chunks."""
    return max(config["seconds"], config["min_units"] * chunk / rate)


def _runs_of(config: dict, rep: int, variant: str) -> bool:
    return variant not in EXTRA_VARIANTS or rep < config["extra_repeats"]


def _repeat(config: dict, skipped: dict, work: str, peers_dir: Path, progress) -> dict:
    """Interleaved runs: every repeat runs every stream, chunk size and variant once (the
    extra variants only in the first `extra_repeats`)."""
    runs: dict[str, dict[str, list]] = {}
    chosen = [v for v in config["variants"] if v not in skipped]
    per_config = sum(_runs_of(config, rep, v) for rep in range(config["repeats"])
                     for v in chosen)
    steps = Steps(progress, "transport",
                  per_config * len(config["streams"]) * len(config["chunk_sizes"]))
    for rep in range(config["repeats"]):
        for stream in config["streams"]:
            channels, rate = stream["channels"], stream["rate"]
            for chunk in config["chunk_sizes"]:
                key = stream_key(channels, rate, chunk)
                for variant in config["variants"]:
                    slot = runs.setdefault(key, {}).setdefault(variant, [])
                    if variant in skipped or not _runs_of(config, rep, variant):
                        continue
                    steps.next(f"{key} {variant} ({rep + 1}/{config['repeats']})")
                    slot.append(_attempt(variant, channels, rate, chunk, config, Path(work),
                                         peers_dir))
                    steps.done()
    steps.finish()
    return runs


def _attempt(variant: str, channels: int, rate: float, chunk: int, config: dict,
             work: Path, peers_dir: Path) -> dict:
    try:
        return run_once(variant, channels, rate, chunk, run_seconds(config, rate, chunk),
                        work, peers_dir)
    except RuntimeError as e:
        return {"error": str(e)}


def _result(runs: list[dict], skipped: str | None) -> dict:
    """Medians over the repeats that ran; skipped with the reason when none did."""
    if skipped:
        return {"skipped": skipped}
    good = [r for r in runs if "error" not in r]
    errors = [r["error"] for r in runs if "error" in r]
    if not good:
        return {"skipped": f"failed at run time: {errors[0] if errors else 'not run'}"}
    result = median_over(good)
    if errors:
        result["errors"] = errors
    return result


def run_once(variant: str, channels: int, rate: float, chunk: int, seconds: float,
             work: Path, peers_dir: Path = PEERS_DIR) -> dict:
    """One run of one variant: its own amplifier, middle process and receiver, and for a
    middle, a second receiver fed by the amplifier directly."""
    zmq = variant in ZMQ_VARIANTS
    source = start_source("zmq" if zmq else "lsl", channels, rate, chunk)
    receivers: list[LslReceiver | ZmqReceiver] = []
    middle: Middle | None = None
    try:
        if zmq:
            receivers.append(ZmqReceiver(source.endpoint if variant in RAW_VARIANTS else None))
            if variant not in RAW_VARIANTS:
                middle = start_middle(variant, source.endpoint, receivers[0].endpoint, work,
                                      peers_dir)
        else:
            target = source.name if variant in RAW_VARIANTS else f"{source.name}-out"
            if variant not in RAW_VARIANTS:
                middle = start_middle(variant, source.name, target, work, peers_dir)
        if variant not in UNPAIRED:  # opened while the middle starts up
            receivers.append(ZmqReceiver(source.endpoint) if zmq
                             else LslReceiver(source.name, START_TIMEOUT_S))
        if not zmq:
            receivers.insert(0, LslReceiver(target, START_TIMEOUT_S))
        return _measure(variant, source, chunk, seconds, receivers, middle)
    except RuntimeError as e:
        raise RuntimeError(f"{e}; {middle.describe_exit()}" if middle else str(e)) from None
    finally:
        for receiver in receivers:
            receiver.close()
        if middle:
            middle.stop()
        source.stop()


def _measure(variant: str, source: Source, chunk: int, seconds: float,
             receivers: list[LslReceiver | ZmqReceiver], middle: Middle | None) -> dict:
    """Wait for data, let it settle for WARMUP_S, then measure for `seconds`; every receiver
    pulls in its own thread at the same time."""
    for receiver, route in zip(receivers, ("", " fed directly")):
        if not wait_first(receiver, START_TIMEOUT_S):
            raise RuntimeError(f"no data reached the receiver{route} within "
                               f"{START_TIMEOUT_S:g} s")
    _collect_all(receivers, WARMUP_S)
    if middle:
        middle.start_cpu()
    t0 = local_clock()
    rows = _collect_all(receivers, seconds)
    cpu = middle.cpu_percent() if middle else 0.0
    if not all(rows):
        raise RuntimeError(f"nothing arrived in the {seconds:g} s measured")
    units = _units(rows[0], source, chunk, windows=variant == "edgert_filter_window")
    out = figures(units, t0, cpu)
    if len(rows) > 1:
        out["added"] = added(units, _units(rows[1], source, chunk))
    return out


def _collect_all(receivers: list, seconds: float) -> list[list[tuple]]:
    with ThreadPoolExecutor(len(receivers)) as pool:
        return list(pool.map(lambda r: collect(r, seconds), receivers))


def _units(rows: list[tuple], source: Source, chunk: int, windows: bool = False) -> Units:
    if source.endpoint is not None:
        return zmq_units(rows)
    if windows:
        return window_units(rows)
    return lsl_units(rows, source.t_start, source.rate, chunk)
