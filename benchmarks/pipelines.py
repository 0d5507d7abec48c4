"""Each shipped pipeline run by `edgert run`, fed by simulated sources: latency per stage
and end to end from the pipeline's report, and the process's CPU and peak memory.

The sources run here; the pipeline runs in its own `edgert run` process, so the CPU and
memory sampled are the pipeline's alone. A method's pipeline is fed by the method's own feeds
(`Method.sources`: a synthetic user, a simulated drive, a robot asking questions over
ZeroMQ); any other pipeline gets simulated EEG on a uniquely named stream per `lsl_inlet`.
Pipelines with other kinds of source, or that do not run here, are reported as skipped with
the reason.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from edgert import pipelines
from edgert.devices.telemetry import Sampler
from edgert.runtime import spec as specs
from edgert.benchmarks.common import Steps, median_over
from edgert.runtime.methods import for_pipeline
from edgert.runtime.demo import CHANNELS, RATE, simulated_eeg
from edgert.runtime.node import Source
from edgert.runtime.registry import node_class
from edgert.runtime.spec import PipelineError
from edgert.streams import StreamInfo
from edgert.streams.replay import Replay


@dataclass(frozen=True)
class Config:
    seconds: float = 20.0
    repeats: int = 3
    seed: int = 0
    chunk_size: int = 1
    connect_timeout: float = 30.0
    method_seconds: float = 20.0  # first outputs need a window or trial (car 10 s, bci 5.5 s)


QUICK = Config(seconds=4.0, repeats=1, method_seconds=12.0)
FULL = Config()


def feeds(spec: specs.PipelineSpec) -> tuple[list[str], list[StreamInfo]]:
    """`--set` overrides naming a fresh stream for every LSL inlet, and those streams."""
    tag = uuid.uuid4().hex[:6]
    overrides, infos = [], []
    for node in spec.nodes:
        if node.node != "lsl_inlet":
            continue
        name = f"edgert-bench-{node.name}-{tag}"
        overrides.append(f"{node.name}.name={name}")
        infos.append(StreamInfo(name=name, type=node.params.get("type") or "EEG",
                                channels=CHANNELS, units=("uV",) * len(CHANNELS), rate=RATE,
                                source_id=name))
    return overrides, infos


def simulated(spec: specs.PipelineSpec, cfg: Config, seed: int) -> tuple[list, list[str]]:
    """The simulated sources of a pipeline (feeds with open, ready, start, wait and stop), and
    the `--set` overrides that point it at them."""
    method = for_pipeline(spec.name)
    if method is not None and method.sources is not None:
        return method.sources(f"edgert-bench-{uuid.uuid4().hex[:6]}",
                              max(cfg.seconds, cfg.method_seconds))
    if others := unfed(spec):
        raise PipelineError(f"no simulated feed for source(s) {', '.join(others)}")
    overrides, infos = feeds(spec)
    data = simulated_eeg(cfg.seconds, seed)
    return [Replay.from_arrays(info, data, chunk_size=cfg.chunk_size) for info in infos], \
        overrides


def unfed(spec: specs.PipelineSpec) -> list[str]:
    """Source nodes this suite cannot simulate (anything but an LSL inlet)."""
    return [f"{n.name} ({n.node})" for n in spec.nodes
            if n.node != "lsl_inlet" and is_source(n.node)]


def is_source(ref: str) -> bool:
    try:
        return issubclass(node_class(ref), Source)
    except LookupError:
        return False  # `edgert run` names the problem


def edgert_run(path: Path, overrides: list[str], report: Path, log: Path) -> subprocess.Popen:
    """`edgert run` in its own process (this interpreter, so the pid is the pipeline's)."""
    command = [sys.executable, "-c", "from edgert.cli.commands import app; app()", "run", str(path),
               "--report", str(report), "--quiet"]
    for item in overrides:
        command += ["--set", item]
    with log.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def measure(path: Path, cfg: Config, seed: int, extra: list[str] = ()) -> dict:
    """One run of one pipeline file (`extra`: more `--set` values): its report's figures and
    the process's resources."""
    players, overrides = simulated(specs.load(path), cfg, seed)
    usage: dict = {}

    def work(proc: subprocess.Popen) -> None:
        with Sampler(pid=proc.pid, interval=0.2, tools=True) as sampler:
            for player in players:
                player.start()
            for player in players:
                player.wait()
        usage.update(sampler.summary())

    saved = fed_run(path, [*overrides, *extra], players, cfg.connect_timeout, work)
    if "skipped" in saved:
        return saved
    if not any(r.get("processed") for r in saved["nodes"].values()):
        return {"skipped": "no node processed anything: the feed sent nothing the "
                           "pipeline took"}
    return summary(saved, usage)


def fed_run(path: Path, overrides: list[str], players: list, timeout: float, work) -> dict:
    """`edgert run` of `path` fed by `players`: open them, wait until the run connects, call
    `work(proc)` (it starts the players), then stop the run as Ctrl-C does. Its saved report,
    or {"skipped": why}."""
    for player in players:
        player.open()
    with tempfile.TemporaryDirectory() as tmp:
        report, log = Path(tmp) / "report.json", Path(tmp) / "log.txt"
        proc = edgert_run(path, overrides, report, log)
        try:
            if not connected(players, proc, timeout):
                why = "never connected" if proc.poll() is None else f"exited {proc.returncode}"
                stop(proc)
                return {"skipped": f"edgert run {why}: {tail(log)}"}
            work(proc)
            stop(proc)
        finally:
            for player in players:
                player.stop()
            if proc.poll() is None:
                proc.kill()
        if not report.exists():
            return {"skipped": f"edgert run wrote no report: {tail(log)}"}
        return json.loads(report.read_text())


def connected(players: list, proc: subprocess.Popen, timeout: float) -> bool:
    """Every feed is ready (its pipeline end is up); False at once if the process ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if all(player.ready(0.2) for player in players):
            return True
    return False


def stop(proc: subprocess.Popen) -> None:
    """Stop `edgert run` as Ctrl-C does (it then writes its report)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tail(log: Path) -> str:
    return log.read_text(errors="replace").strip()[-400:]


def summary(report: dict, usage: dict) -> dict:
    """The report's latency figures per node (with a node's own stages, `stage_ms`, when it
    times them) and the process's resources."""
    keep = ("p50_ms", "p90_ms", "p99_ms", "processed", "dropped", "stage_ms")
    nodes = {name: {k: r[k] for k in keep if k in r} for name, r in report["nodes"].items()}
    return {"end_to_end": report["end_to_end"], "nodes": nodes, "dropped": report["dropped"],
            "quarantined": report["quarantined"], "cpu_pct_mean": usage.get("cpu_pct_mean"),
            "cpu_pct_max": usage.get("cpu_pct_max"), "rss_peak_mb": usage.get("rss_peak_mb")}


def model_nodes(path: Path) -> list[str]:
    """The nodes of a pipeline that run a bundle on a chosen backend."""
    names = []
    for node in specs.load(path).nodes:
        try:
            fields = node_class(node.node).Params.model_fields
        except LookupError:
            continue  # `edgert run` names the problem
        if "backend" in fields and not is_source(node.node):
            names.append(node.name)
    return names


def run_pipelines(quick: bool, out_dir: Path | None = None, progress=None,
                  config: Config | None = None, paths: list[Path] | None = None) -> dict:
    """Every pipelines/*.yaml (or `paths`), each run `repeats` times; medians reported. A
    pipeline that runs models is run again with every model node on torch eager
    (`NAME (torch)`), in the same benchmark, as the baseline ONNX Runtime is measured against."""
    cfg = config or (QUICK if quick else FULL)
    paths = paths or sorted(pipelines.HERE.glob("*.yaml"))
    runs_of = [(path, path.stem, []) for path in paths]
    runs_of += [(path, f"{path.stem} (torch)", [f"{n}.backend=torch" for n in nodes])
                for path in paths if (nodes := model_nodes(path))]
    steps = Steps(progress, "pipelines", len(runs_of) * cfg.repeats)
    results = {}
    for path, name, extra in runs_of:
        runs = []
        for i in range(cfg.repeats):
            steps.next(f"{name} ({cfg.seconds:g} s)")
            try:
                runs.append(measure(path, cfg, cfg.seed + i, extra))
            except PipelineError as e:
                runs.append({"skipped": str(e)})
            steps.done()
            if "skipped" in runs[-1]:
                break
        results[name] = runs[-1] if "skipped" in runs[-1] else median_over(runs)
    steps.finish()
    return {"config": {**asdict(cfg), "channels": len(CHANNELS), "rate_hz": RATE,
                       "runner": "edgert run PIPELINE --set SOURCE.name=... (own process)",
                       "source": "each method's simulated sources (Method.sources), else "
                                 "simulated EEG replayed on LSL, from the benchmark process",
                       "seeds": [cfg.seed + i for i in range(cfg.repeats)]},
            "results": results}


def main() -> None:
    """`python -m edgert.benchmarks.pipelines NAME... --out FILE.json`: the full-length runs of
    the named pipelines alone (on ONNX Runtime and on torch eager), for a method's page."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("names", nargs="+", help="pipelines under pipelines/, e.g. nav")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    result = run_pipelines(False, paths=[pipelines.find(n) for n in args.names])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    for name, r in result["results"].items():
        line = r.get("skipped") or f"end to end p99 {r['end_to_end']['p99_ms']:.2f} ms"
        print(f"{name}: {line}")
    print(f"results written to {args.out}")


if __name__ == "__main__":
    main()
