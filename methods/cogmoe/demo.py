"""`edgert demo car`: a simulated drive on four live LSL sensors that degrade and drop out.

The drive's sensors are replayed in real time as four LSL streams. On a schedule, the gaze
tracker disconnects (its stream stops sending), the EEG gets noisy and the ECG flatlines
(held at one value). `pipelines/car.yaml` estimates the load every second; a client reads the
estimates over LSL as any program would. The report's metrics: online F1 and accuracy against
the true load, the recovery expert's gate weight on the gaze sensor while it is gone and while
it is back, the noise-robust weight on the EEG while it is noisy and while clean, the gate
weights' correlation with the injected damage, and latency percentiles; a plot of estimate,
true load and gate weights over the drive is written next to the report.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np

from edgert import pipelines
from edgert.methods.cogmoe.export import OUTPUTS, cached_bundle
from edgert.methods.cogmoe.features import CHUNK, WINDOW_S
from edgert.methods.cogmoe.simulate import CHANNELS, MODALITIES, RATES, simulate
from edgert.runtime.demo import Client, run_demo
from edgert.runtime.pipeline import Pipeline
from edgert.streams import StreamInfo
from edgert.streams.replay import Replay
from edgert.streams.replay_process import ReplayProcess
from edgert.streams.xdf_read import Recording
from edgert.streams.zmq_link import free_endpoint

TYPES = {"eeg": "EEG", "ecg": "ECG", "eda": "EDA", "gaze": "Gaze"}
USER = 201


def schedule(seconds: float) -> dict[str, tuple[float, float]]:
    """When each kind of trouble happens, as fractions of the drive turned into seconds."""
    return {"gaze_dropout": (0.30 * seconds, 0.50 * seconds),
            "eeg_noise": (0.55 * seconds, 0.75 * seconds),
            "ecg_flatline": (0.80 * seconds, 0.90 * seconds)}


def recordings(name: str, seconds: int, seed: int = 0) -> tuple[list[Recording], np.ndarray,
                                                                  dict]:
    drive = simulate(seconds, USER + seed)
    trouble = schedule(seconds)
    rng = np.random.default_rng(seed)
    out = []
    for m in MODALITIES:
        x, t = drive.signals[m].copy(), drive.times(m)
        if m == "eeg":
            a, b = trouble["eeg_noise"]
            noisy = (t >= a) & (t < b)
            x[noisy] += rng.standard_normal(x[noisy].shape) * 3 * x.std(0)
        if m == "ecg":
            a, b = trouble["ecg_flatline"]
            flat = (t >= a) & (t < b)
            x[flat] = x[flat][0]
        keep = np.ones(len(t), bool)
        if m == "gaze":
            a, b = trouble["gaze_dropout"]
            keep = (t < a) | (t >= b)
        info = StreamInfo(name=f"{name}-{m}", type=TYPES[m], channels=CHANNELS[m],
                          rate=RATES[m], source_id=f"{name}-{m}")
        out.append(Recording(info, x[keep], t[keep]))
    return out, drive.load, trouble


def overrides(name: str) -> list[str]:
    """`--set` values that point `pipelines/car.yaml` at the streams named from `name`."""
    return [*(f"{m}.name={name}-{m}" for m in MODALITIES), f"stage2.bundle={cached_bundle()}",
            f"estimate_lsl.name={name}-load", f"quality_lsl.name={name}-quality",
            f"estimate_zmq.endpoint={free_endpoint()}"]


def sources(name: str, seconds: float) -> tuple[list[Replay], list[str]]:
    """The drive's four streams for `seconds`, and the pipeline's overrides (for `bench`)."""
    return [Replay(recordings(name, int(seconds) + 1)[0], chunk_size=CHUNK)], overrides(name)


def car(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 90); its figure goes into `out`."""
    duration = duration or 90.0
    name = f"edgert-car-{uuid.uuid4().hex[:6]}"
    streams, load, trouble = recordings(name, int(duration) + 5)
    pipe = Pipeline.from_yaml(pipelines.find("car"), overrides(name))
    client = Client(f"{name}-load")
    replay = ReplayProcess(streams, chunk_size=CHUNK)
    report = run_demo(pipe, replay, [client], run, duration)
    report["metrics"] = metrics(client, load, trouble, replay.t_start)
    report["figures"] = [str(plot(client, load, trouble, replay.t_start, out / f"{name}.png"))]
    return report


def _series(client: Client, t0: float) -> tuple[np.ndarray, np.ndarray]:
    if not client.data:
        return np.zeros(0), np.zeros((0, len(OUTPUTS)))
    return np.array(client.stamps) - t0, np.concatenate(client.data)


def _column(name: str) -> int:
    return OUTPUTS.index(name)


def metrics(client: Client, load: np.ndarray, trouble: dict, t0: float) -> dict:
    from sklearn.metrics import f1_score

    times, est = _series(client, t0)
    if not len(times):
        return {"estimates": 0}
    truth = np.array([load[max(int(t - WINDOW_S), 0):max(int(t), 1)].mean() > 0.5
                      for t in times]).astype(int)
    pred = (est[:, _column("high_load")] > 0.5).astype(int)
    during = lambda key: (times >= trouble[key][0] + WINDOW_S / 2) & (  # noqa: E731
        times < trouble[key][1])
    outside = lambda key: (times < trouble[key][0]) | (  # noqa: E731
        times >= trouble[key][1] + WINDOW_S)
    gaze_rec = est[:, _column("gate_gaze_recovery")]
    eeg_rob = est[:, _column("gate_eeg_noise_robust")]
    lat = np.array(client.latency) * 1e3
    return {
        "estimates": int(len(times)),
        "online_f1": float(f1_score(truth, pred, zero_division=0)),
        "online_accuracy": float(np.mean(truth == pred)),
        "gaze_recovery_gate_during_dropout": _mean(gaze_rec[during("gaze_dropout")]),
        "gaze_recovery_gate_otherwise": _mean(gaze_rec[outside("gaze_dropout")]),
        "eeg_robust_gate_during_noise": _mean(eeg_rob[during("eeg_noise")]),
        "eeg_robust_gate_otherwise": _mean(eeg_rob[outside("eeg_noise")]),
        "client_p50_ms": float(np.percentile(lat, 50)),
        "client_p99_ms": float(np.percentile(lat, 99)),
    }


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if len(x) else float("nan")


def plot(client: Client, load: np.ndarray, trouble: dict, t0: float, path: Path) -> Path:
    """Estimate, true load and per-sensor gate weights over the drive, saved at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times, est = _series(client, t0)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    top.plot(np.arange(len(load)), load, color="k", label="true load")
    if len(times):
        top.plot(times, est[:, _column("high_load")], label="P(high load)")
        for m in MODALITIES:
            bottom.plot(times, est[:, _column(f"gate_{m}_recovery")], label=f"{m} recovery")
        bottom.plot(times, est[:, _column("gate_eeg_noise_robust")], "--",
                    label="eeg noise-robust")
    for key, (a, b) in trouble.items():
        for ax in (top, bottom):
            ax.axvspan(a, b, alpha=0.1, color="red")
        top.text(a, 1.02, key.replace("_", " "), fontsize=7)
    top.set_ylabel("load")
    top.legend(fontsize=7, loc="lower left")
    bottom.set_ylabel("gate weight")
    bottom.set_xlabel("s")
    bottom.legend(fontsize=7, ncol=3, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
