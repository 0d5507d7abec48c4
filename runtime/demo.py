"""The built-in live demo: a simulated EEG amplifier, the band-pass pipeline, a client.

Everything is real on this machine: the amplifier is a replay of generated EEG on an LSL
outlet, the pipeline is `pipelines/bandpass.yaml`, and the client reads the result through an
LSL inlet as any other program would. No hardware needed.
"""
from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import numpy as np
from scipy import signal

from edgert import pipelines
from edgert.runtime.pipeline import Pipeline
from edgert.streams import StreamInfo, local_clock
from edgert.streams.lsl import Inlet
from edgert.streams.replay_process import ReplayProcess
from edgert.streams.xdf_read import Recording

CHANNELS = ("Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "T7", "C3", "Cz", "C4", "T8", "P7",
            "P3", "Pz", "P4", "P8", "O1", "Oz", "O2", "A1", "A2")
RATE = 250.0


def simulated_eeg(seconds: float, seed: int = 0) -> np.ndarray:
    """1/f background, 10 Hz alpha over the back of the head, 50 Hz mains and slow drift (uV)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    pink = signal.lfilter([1.0], [1.0, -0.98], rng.standard_normal((n, len(CHANNELS))), axis=0)
    back = np.array([name[0] in "PO" for name in CHANNELS], float)
    alpha = 8 * np.sin(2 * np.pi * 10 * t)[:, None] * (0.3 + back) * (1 + 0.5 * np.sin(t))[:, None]
    mains = 5 * np.sin(2 * np.pi * 50 * t)[:, None]
    drift = 40 * np.sin(2 * np.pi * 0.05 * t)[:, None]
    return (3 * pink + alpha + mains + drift).astype(np.float32)


class Client:
    """Reads the pipeline's output like any LSL program; counts samples and latency, and
    notes when (wall clock) the first result came."""

    def __init__(self, name: str):
        self.inlet = Inlet(name=name, processing=(), reconnect=False)
        self.latency: list[float] = []
        self.samples = 0
        self.data: list[np.ndarray] = []
        self.stamps: list[float] = []
        self.first_at: float | None = None
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while self.running:
            try:
                chunk = self.inlet.pull(0.2)
            except ConnectionError:
                return
            if chunk is not None:
                self.first_at = self.first_at or time.time()
                self.latency.append(local_clock() - chunk.timestamps[-1])
                self.samples += len(chunk)
                self.data.append(chunk.data)
                self.stamps.extend(chunk.timestamps)

    def stop(self) -> None:
        self.running = False
        self.thread.join(2)
        self.inlet.close()


def band_power(data: np.ndarray, low: float, high: float) -> float:
    freqs, psd = signal.welch(data, fs=RATE, axis=0, nperseg=256)
    return float(psd[(freqs >= low) & (freqs <= high)].mean())


def metrics(client: Client, raw: np.ndarray, sent: int) -> dict:
    """What a user checks: nothing lost, latency as the client sees it, mains and drift gone.

    The client's samples are the last `len(out)` sent, so mains and alpha are compared with
    that span of the raw signal (alpha's amplitude drifts over the recording)."""
    out = np.concatenate(client.data) if client.data else np.zeros((0, len(CHANNELS)))
    lat = np.array(client.latency) * 1e3 if client.latency else np.zeros(1)
    start = max(sent - len(out), 0)
    settled, reference = out[int(RATE):], raw[start + int(RATE):start + len(out)]
    span = round((client.stamps[-1] - client.stamps[0]) * RATE) + 1 if client.stamps else 0
    return {
        "samples_sent": sent,
        "samples_received": client.samples,
        "samples_lost_after_connect": span - client.samples,
        "client_p50_ms": float(np.percentile(lat, 50)),
        "client_p99_ms": float(np.percentile(lat, 99)),
        "mains_attenuation_db": float(10 * np.log10(band_power(reference, 48, 52) /
                                                    band_power(settled, 48, 52)))
        if len(settled) > 256 else 0.0,
        "alpha_kept_ratio": band_power(settled, 8, 12) / band_power(reference, 8, 12)
        if len(settled) > 256 else 0.0,
    }


def bandpass(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 10); `run(pipeline, duration)` shows the
    running pipeline until then. It draws no figure, so `out` stays unused."""
    duration = duration or 10.0
    name = f"edgert-demo-{uuid.uuid4().hex[:6]}"
    info = StreamInfo(name=name, type="EEG", channels=CHANNELS, units=("uV",) * len(CHANNELS),
                      rate=RATE, source_id=name)
    raw = simulated_eeg(max(duration, 1.0) + 2.0)
    replay = ReplayProcess([Recording(info, raw, np.arange(len(raw)) / RATE)], chunk_size=8)
    pipe = Pipeline.from_yaml(pipelines.find("bandpass"), [f"source.name={name}"])
    client = Client(f"{name}-bandpass")
    report = run_demo(pipe, replay, [client], run, duration)
    report["metrics"] = metrics(client, raw, sum(replay.pushed.values()))
    return report


def run_demo(pipe: Pipeline, replay: ReplayProcess | None, clients: list, run,
             duration: float, others: tuple = (), status=None) -> dict:
    """Open the simulated sources (if any; in their own process, as sensors are), start the
    pipeline, let the clients (objects with a `thread` and a `stop()`) work, `run` for
    `duration`, and stop everything in order: the clients (`others`: more readers with a
    `stop()`), then the pipeline, then the sources, so no reader sees its stream vanish.
    `status()`, if given, is a line shown under the live table. Returns the pipeline's
    report; its `shortfalls` say why the run did not do its job."""
    if replay:
        replay.open()
    pipe.start()
    try:
        if replay:
            replay.ready(10.0)
        for client in clients:
            client.thread.start()
        if replay:
            replay.start()
        run(pipe, duration, status)
    finally:
        for reader in (*clients, *others):
            reader.stop()
        pipe.stop()
        if replay:
            replay.stop()
    report = pipe.report()
    report["shortfalls"] = pipe.shortfalls(report)
    firsts = [c.first_at for c in clients if c.first_at]
    report["first_result_unix"] = min(firsts) if firsts else None
    return report


DEMOS = {"bandpass": bandpass}
