"""`edgert demo bci`: a new synthetic user on a live LSL amplifier, decoded and adapted live.

A user the model never saw (another subject, on a shifted session) is replayed in real time
as an LSL EEG stream plus an LSL marker stream of cues; `pipelines/bci.yaml` decodes each
trial. Beside it the demo runs the no-adaptation decoder (the same network trained on
unaligned trials, the bundle's `baseline/`) on the same trials. Clients read the three
predictions from LSL (adapted; aligned network alone; no adaptation), and the adapted ones
from ZeroMQ, as any program would; each is scored against the cues' true classes.
"""
from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np

from edgert import pipelines
from edgert.runtime.plugin import DataError
from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.export import cached_bundle
from edgert.methods.btta_dg.figures import block_accuracy
from edgert.methods.btta_dg.train import EPOCH
from edgert.runtime.demo import Client, run_demo
from edgert.runtime import spec as specs
from edgert.runtime.pipeline import Pipeline
from edgert.streams import StreamInfo
from edgert.streams.replay import Replay
from edgert.streams.replay_process import ReplayProcess
from edgert.streams.xdf_read import Recording
from edgert.streams.zmq_link import Subscriber, free_endpoint

REST_S = 1.5
USER = 101  # a subject seed no training run uses
BLOCK = 8  # trials per block of the accuracy curve
# metric key -> the LSL stream (NAME-...) that carries that prediction
STREAMS = {"": "probs", "alignment_only": "prior", "no_adaptation": "baseline"}


def recordings(name: str, trials: int, seed: int = 0) -> tuple[list[Recording], list[tuple]]:
    """EEG and cue-marker recordings of the demo user, and each cue's (time s, class)."""
    subject = synth.make_subject(USER)
    data, cues = synth.continuous(subject, synth.make_session(subject, 1), trials, seed,
                                  REST_S)
    eeg = StreamInfo(name=f"{name}-eeg", type="EEG", channels=synth.CHANNELS,
                     units=("uV",) * len(synth.CHANNELS), rate=synth.RATE,
                     source_id=f"{name}-eeg")
    markers = StreamInfo(name=f"{name}-markers", type="Markers", channels=("cue",), rate=0.0,
                         dtype="string", source_id=f"{name}-markers")
    times = np.array([c / synth.RATE for c, _ in cues])
    labels = np.array([[synth.LABELS[y]] for _, y in cues], dtype=object)
    return ([Recording(eeg, data, np.arange(len(data)) / synth.RATE),
             Recording(markers, labels, times)], [(t, y) for t, (_, y) in zip(times, cues)])


class ZmqClient:
    """Counts the adapted probabilities that arrive on the pipeline's ZeroMQ PUB."""

    def __init__(self, endpoint: str):
        self.sub = Subscriber(endpoint)
        self.count = 0
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while self.running:
            if self.sub.pull(0.2) is not None:
                self.count += 1

    def stop(self) -> None:
        self.running = False
        self.thread.join(2)
        self.sub.close()


def hits(client: Client, cues: list[tuple], t0: float) -> dict[int, bool]:
    """Per decoded trial (its cue's index), whether the prediction was the cued class; each
    prediction is matched to its cue by time."""
    if not client.data:
        return {}
    probs = np.concatenate(client.data)
    ends = np.array([t + EPOCH[1] for t, _ in cues])
    found = {}
    for stamp, p in zip(client.stamps, probs):
        k = int(np.argmin(np.abs(ends - (stamp - t0))))
        found[k] = int(np.argmax(p)) == cues[k][1]
    return found


def blocks(found: dict[int, bool]) -> list[float]:
    """Accuracy per block of BLOCK consecutive trials (the last block may be shorter)."""
    if not found:
        return []
    last = max(found) // BLOCK
    return [float(np.mean(h)) for b in range(last + 1)
            if (h := [v for k, v in found.items() if k // BLOCK == b])]


def overrides(name: str, endpoint: str) -> list[str]:
    """`--set` values that point `pipelines/bci.yaml` at the streams named from `name`."""
    bundle = cached_bundle()
    return [f"eeg.name={name}-eeg", f"markers.name={name}-markers", f"decoder.bundle={bundle}",
            f"adapt.bundle={bundle}", f"probs_lsl.name={name}-probs",
            f"prior_lsl.name={name}-prior", f"probs_zmq.endpoint={endpoint}"]


def with_baseline(name: str, endpoint: str) -> Pipeline:
    """`pipelines/bci.yaml` plus a branch that decodes the same trials with the no-adaptation
    decoder and publishes them on LSL as `NAME-baseline`."""
    bundle = cached_bundle() / "baseline"
    if not (bundle / "manifest.json").exists():
        raise DataError(f"{bundle.parent} has no no-adaptation decoder (baseline/); train "
                        "both again with `edgert train btta_dg`")
    spec = specs.load(pipelines.find("bci"), overrides(name, endpoint))
    spec.nodes += [
        specs.NodeSpec(name="baseline", node="infer", params={"bundle": str(bundle)}),
        specs.NodeSpec(name="baseline_probs", node="edgert.methods.btta_dg.node:Adapt",
                       params={"bundle": str(bundle), "use_gmm": False}),
        specs.NodeSpec(name="baseline_lsl", node="lsl_outlet",
                       params={"name": f"{name}-baseline"})]
    spec.edges += [specs.EdgeSpec(source="epoch", target="baseline"),
                   specs.EdgeSpec(source="baseline", target="baseline_probs"),
                   specs.EdgeSpec(source="baseline_probs.out", target="baseline_lsl")]
    return Pipeline(spec, "pipelines/bci.yaml with the no-adaptation branch")


def sources(name: str, seconds: float) -> tuple[list[Replay], list[str]]:
    """The demo user's streams for `seconds`, and the pipeline's overrides (for `bench`)."""
    streams, _ = recordings(name, int(seconds / (synth.TRIAL_S + REST_S)) + 1)
    return [Replay(streams, chunk_size=10)], overrides(name, free_endpoint())


def bci(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 240: about 43 trials, five blocks);
    the accuracy-per-block figure goes into `out`."""
    duration = duration or 240.0
    name = f"edgert-bci-{uuid.uuid4().hex[:6]}"
    streams, cues = recordings(name, int(duration / (synth.TRIAL_S + REST_S)) + 2)
    endpoint = free_endpoint()
    pipe = with_baseline(name, endpoint)
    clients = {key: Client(f"{name}-{stream}") for key, stream in STREAMS.items()}
    zmq_client = ZmqClient(endpoint)
    replay = ReplayProcess(streams, chunk_size=10)

    def status() -> str:
        t0 = replay.t_start or 0.0
        return line({k: blocks(hits(c, cues, t0)) for k, c in clients.items()})

    report = run_demo(pipe, replay, list(clients.values()), run, duration,
                      others=(zmq_client,), status=status)
    report["metrics"] = metrics(clients, zmq_client, cues, replay.t_start)
    decoded = report["metrics"]["trials_decoded"]
    report["figures"] = [str(block_accuracy(report["metrics"], out / f"{name}.png"))] \
        if decoded else []  # stopped before the first trial: nothing to draw
    return report


def line(curves: dict[str, list[float]]) -> str:
    """The live line: accuracy per block of trials, adapted / aligned only / no adaptation."""
    if not curves[""]:
        return f"accuracy per block of {BLOCK} trials: waiting for the first trial"
    cells = ["/".join(f"{c[b]:.0%}" if b < len(c) else "-" for c in curves.values())
             for b in range(len(curves[""]))]
    return (f"accuracy per block of {BLOCK} trials, adapted/aligned only/no adaptation: "
            f"{'  '.join(cells)}")


def metrics(clients: dict[str, Client], zmq_client: ZmqClient, cues: list[tuple],
            t0: float) -> dict:
    """`online_accuracy[_KEY]` and `block_accuracy[_KEY]` per prediction (KEY: none for
    the adapted one, `alignment_only`, `no_adaptation`), with the ZeroMQ count and latency."""
    found = {k: hits(c, cues, t0) for k, c in clients.items()}
    lat = np.array(clients[""].latency) * 1e3 if clients[""].latency else np.zeros(1)
    out = {"trials_decoded": len(found[""]), "block_trials": BLOCK}
    for key, h in found.items():
        suffix = f"_{key}" if key else ""
        out[f"online_accuracy{suffix}"] = float(np.mean(list(h.values()))) if h else 0.0
        out[f"block_accuracy{suffix}"] = blocks(h)
    return {**out, "zmq_messages": zmq_client.count,
            "client_p50_ms": float(np.percentile(lat, 50)),
            "client_p99_ms": float(np.percentile(lat, 99))}
