"""What sits between the amplifier and the receiver: edgert, a hand-written relay, or a peer.

Each runs as its own process group (so a peer's worker processes stop with it), with
LSLAPICFG pointing at the repository's lsl_api.cfg so everything stays on 127.0.0.1.
Peers run from their own virtual environments made by benchmarks/setup_peers.sh.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psutil
import yaml

BENCHMARKS = Path(__file__).resolve().parents[1]
LSL_CONFIG = BENCHMARKS.parent / "lsl_api.cfg"
PEER_SCRIPTS = BENCHMARKS / "peers"
PEERS_DIR = BENCHMARKS / ".peers"
SETUP = "bash benchmarks/setup_peers.sh"
# Timeflux polls its graph at this rate; 1 ms matches MNE-LSL's default acquisition delay.
TIMEFLUX_RATE_HZ = 1000
FILTER_WINDOW = {"name": "filter_window", "nodes": [
    {"name": "source", "node": "lsl_inlet", "params": {"type": "EEG"}},
    {"name": "filter", "node": "filter", "params": {"kind": "bandpass", "freqs": [1, 40]}},
    {"name": "window", "node": "window", "params": {"length": 0.5, "hop": 0.1}},
    {"name": "sink", "node": "lsl_outlet"}]}


def liblsl() -> Path | None:
    """The liblsl that pylsl 1.18 ships in this environment: Timeflux's pylsl 1.16 has none."""
    import pylsl

    found = sorted((Path(pylsl.__file__).parent / "lib").glob("liblsl.so*"))
    return found[0] if found else None


def peer_problem(variant: str, peers_dir: Path) -> str | None:
    """Why a peer cannot run here (with how to fix it), or None when it can; each peer's
    venv is peers_dir/<variant>."""
    venv = peers_dir / variant
    error = peers_dir / f"{variant}.error"
    if not (venv / "ok").exists():
        if error.exists():
            return f"{SETUP} failed for {variant}: {error.read_text().strip()[-600:]}"
        return f"no {variant} environment at {venv}: run {SETUP}"
    if variant == "timeflux" and liblsl() is None:
        return ("no liblsl in this environment's pylsl to lend Timeflux's pylsl 1.16 "
                "(PYLSL_LIB): pip install 'pylsl>=1.18.6'")
    return None


def edgert_command() -> list[str]:
    """`edgert run` of this Python's environment, not whichever edgert is first on PATH."""
    beside = Path(sys.executable).with_name("edgert")
    return [str(beside if beside.exists() else shutil.which("edgert") or "edgert"), "run"]


def zmq_pipeline(source: str, target: str) -> dict:
    """zmq_in (SUB, connects to the amplifier) -> zmq_out (PUB, connects to the receiver)."""
    return {"name": "zmq_passthrough", "nodes": [
        {"name": "source", "node": "zmq_in", "params": {"endpoint": source, "pattern": "sub"}},
        {"name": "sink", "node": "zmq_out",
         "params": {"endpoint": target, "pattern": "pub", "bind": False}}]}


def command(variant: str, source: str, target: str, work: Path,
            peers_dir: Path) -> tuple[list[str], dict]:
    """The command line and extra environment of the middle process for a variant."""
    edgert = edgert_command()
    names = ["--quiet", "--set", f"source.name={source}", "--set", f"sink.name={target}"]
    if variant == "edgert":
        return [*edgert, "passthrough", *names], {}
    if variant == "edgert_no_clocksync":
        return [*edgert, "passthrough", *names, "--set", "source.processing=[]"], {}
    if variant == "edgert_filter_window":
        return [*edgert, str(write_yaml(work, FILTER_WINDOW)), *names], {}
    if variant == "edgert_zmq":
        return [*edgert, str(write_yaml(work, zmq_pipeline(source, target))), "--quiet"], {}
    if variant == "pylsl_relay":
        return [sys.executable, str(PEER_SCRIPTS / "pylsl_relay.py"), source, target], {}
    if variant == "timeflux":
        return ([str(peers_dir / "timeflux" / "bin" / "timeflux"),
                 "-e", f"SOURCE={source}", "-e", f"TARGET={target}",
                 "-e", f"RATE={TIMEFLUX_RATE_HZ}", str(PEER_SCRIPTS / "timeflux_relay.yaml")],
                {"PYLSL_LIB": str(liblsl())})
    if variant == "mne_lsl":
        return [str(peers_dir / "mne_lsl" / "bin" / "python"),
                str(PEER_SCRIPTS / "mne_lsl_relay.py"), source, target], {}
    raise ValueError(f"no middle process for variant {variant!r}")


def write_yaml(work: Path, pipeline: dict) -> Path:
    path = work / f"{pipeline['name']}.yaml"
    path.write_text(yaml.safe_dump(pipeline, sort_keys=False))
    return path


@dataclass
class Middle:
    """A running middle process group, its log, and a CPU meter over its process tree."""

    process: subprocess.Popen
    log: Path
    _cpu0: dict | None = None
    _t0: float = 0.0

    def log_tail(self, chars: int = 800) -> str:
        return self.log.read_text(errors="replace").strip()[-chars:]

    def describe_exit(self) -> str:
        code = self.process.poll()
        state = "is still running" if code is None else f"exited with code {code}"
        return f"{self.process.args[0]} {state}; its log ({self.log}) ends: {self.log_tail()}"

    def start_cpu(self) -> None:
        self._cpu0 = _cpu_times(self.process.pid)
        self._t0 = time.monotonic()

    def cpu_percent(self) -> float:
        """CPU of the whole process tree since start_cpu, in % of one core."""
        now = _cpu_times(self.process.pid)
        used = sum(now.get(pid, t) - t for pid, t in self._cpu0.items())
        used += sum(t for pid, t in now.items() if pid not in self._cpu0)
        return 100 * used / (time.monotonic() - self._t0)

    def stop(self) -> None:
        """SIGINT to the group (a graceful stop for Timeflux and edgert), then SIGKILL to
        whatever of the group is left."""
        self._signal(signal.SIGINT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._signal(signal.SIGKILL)
        self.process.wait(10)

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass


def _cpu_times(pid: int) -> dict[int, float]:
    """user + system seconds of a process and all its descendants, by pid."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return {}
    times = {}
    for p in procs:
        try:
            t = p.cpu_times()
            times[p.pid] = t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return times


def start_middle(variant: str, source: str, target: str, work: Path,
                 peers_dir: Path) -> Middle:
    """Start the variant's middle process in its own process group, logging to work/."""
    argv, extra = command(variant, source, target, work, peers_dir)
    env = {**os.environ, **extra, "LSLAPICFG": str(LSL_CONFIG)}
    log = work / f"{variant}-{uuid.uuid4().hex[:8]}.log"
    with log.open("w") as out:
        process = subprocess.Popen(argv, cwd=work, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    return Middle(process, log)
