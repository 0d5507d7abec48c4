"""`edgert demo eeg2image`: a simulated viewer watches images while `pipelines/eeg2image.yaml`
decodes each one from their EEG, live.

The viewer the model was trained on sees a new stream of images, held-out concepts among them
(as the evaluation's test set), one every 1.1-1.4 s; their EEG goes out on an LSL outlet and
each onset as an `image:INDEX` marker. Clients read the retrieved names and the generated
images from ZeroMQ and the scores from LSL, as any program would. Each decoded trial is
saved as a strip: the image shown, the top retrieved one, then the generated image at each
scale, coarse to fine.
"""
from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np

from edgert import pipelines
from edgert.methods.avde import images as image_set
from edgert.methods.avde import simulate
from edgert.methods.avde.export import cached_bundle
from edgert.methods.avde.node import decode_png
from edgert.runtime.demo import Client, run_demo
from edgert.runtime.pipeline import Pipeline
from edgert.streams import StreamInfo, local_clock
from edgert.streams.replay import Replay
from edgert.streams.replay_process import ReplayProcess
from edgert.streams.xdf_read import Recording
from edgert.streams.zmq_link import Subscriber, free_endpoint

SUBJECT = 1  # the viewer the shipped model was trained on, in a new session
SESSION = 50


def shown_concepts(trials: int, seed: int = 0) -> np.ndarray:
    """Images to show: held-out and training concepts alternating, shuffled."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([image_set.held_out(), rng.choice(image_set.training_concepts(),
                                                            len(image_set.held_out()), False)])
    return rng.permutation(np.resize(rng.permutation(pool), trials))


def recordings(name: str, trials: int, seed: int = 0) -> tuple[list[Recording], np.ndarray,
                                                                np.ndarray]:
    """EEG and marker recordings of the viewer; each onset's time (s) and concept."""
    concepts = shown_concepts(trials, seed)
    data, onsets = simulate.session(simulate.make_subject(SUBJECT), concepts, SESSION + seed)
    rate = simulate.RATE
    eeg = StreamInfo(name=f"{name}-eeg", type="EEG", channels=simulate.CHANNELS,
                     units=("uV",) * len(simulate.CHANNELS), rate=rate, source_id=f"{name}-eeg")
    markers = StreamInfo(name=f"{name}-markers", type="Markers", channels=("image",),
                         rate=0.0, dtype="string", source_id=f"{name}-markers")
    times = onsets / rate
    labels = np.array([[f"image:{c}"] for c in concepts], dtype=object)
    return ([Recording(eeg, data, np.arange(len(data)) / rate),
             Recording(markers, labels, times)], times, concepts)


class ZmqReader:
    """Keeps every chunk a PUB sends, with the local clock at arrival."""

    def __init__(self, endpoint: str):
        self.sub = Subscriber(endpoint)
        self.chunks: list = []
        self.arrived: list[float] = []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while self.running:
            chunk = self.sub.pull(0.2)
            if chunk is not None:
                self.chunks.append(chunk)
                self.arrived.append(local_clock())

    def stop(self) -> None:
        self.running = False
        self.thread.join(2)
        self.sub.close()


def overrides(name: str, ids: str, image: str, bundle: Path | None = None) -> list[str]:
    """`--set` values that point `pipelines/eeg2image.yaml` at the streams named from `name`."""
    bundle = bundle or cached_bundle()
    return [f"eeg.name={name}-eeg", f"markers.name={name}-markers",
            f"encoder.bundle={bundle}", f"retrieve.bundle={bundle}", f"generate.bundle={bundle}",
            f"scores_lsl.name={name}-scores", f"ids_zmq.endpoint={ids}",
            f"image_zmq.endpoint={image}"]


def sources(name: str, seconds: float) -> tuple[list[Replay], list[str]]:
    """The viewer's streams for `seconds`, and the pipeline's overrides (for `bench`)."""
    streams, _, _ = recordings(name, int(seconds / np.mean(simulate.SOA_S)) + 1)
    return [Replay(streams, chunk_size=10)], overrides(name, free_endpoint(), free_endpoint())


def trial_of(stamp: float, onsets: np.ndarray, t0: float) -> int:
    """The trial whose epoch ends at `stamp` (its last sample's time)."""
    return int(np.argmin(np.abs(onsets + simulate.EPOCH_S - (stamp - t0))))


def eeg2image(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 60: about 48 images); the strips go into
    `out/NAME/`."""
    duration = duration or 60.0
    name = f"edgert-eeg2image-{uuid.uuid4().hex[:6]}"
    streams, onsets, concepts = recordings(name, int(duration / np.mean(simulate.SOA_S)) + 2)
    ids_at, image_at = free_endpoint(), free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("eeg2image"), overrides(name, ids_at, image_at))
    scores = Client(f"{name}-scores")
    ids, images = ZmqReader(ids_at), ZmqReader(image_at)
    replay = ReplayProcess(streams, chunk_size=10)

    def status() -> str:
        found = hits(ids.chunks, onsets, concepts, replay.t_start or 0.0)
        return (f"images decoded: {len(images.chunks)}; retrieval top-1 "
                f"{np.mean(found[0]) if found[0] else 0:.0%}, top-5 "
                f"{np.mean(found[1]) if found[1] else 0:.0%} of {len(found[0])}")

    report = run_demo(pipe, replay, [scores], run, duration, others=(ids, images),
                      status=status)
    t0 = replay.t_start or 0.0
    top1, top5 = hits(ids.chunks, onsets, concepts, t0)
    report["metrics"] = {
        "trials_retrieved": len(top1), "images_generated": len(images.chunks),
        "retrieval_top1": float(np.mean(top1)) if top1 else 0.0,
        "retrieval_top5": float(np.mean(top5)) if top5 else 0.0,
        "chance_top1": 1.0 / len(image_set.CONCEPTS),
        "scores_on_lsl": scores.samples, **scale_times(images.chunks)}
    report["strips"] = str(out / name)
    grid = strips(images.chunks, ids.chunks, onsets, concepts, t0, out / name)
    report["figures"] = [str(grid)] if grid else []
    return report


def hits(chunks: list, onsets: np.ndarray, concepts: np.ndarray, t0: float
         ) -> tuple[list[bool], list[bool]]:
    """Per retrieved trial: whether the shown concept was first, and among the five first."""
    top1, top5 = [], []
    for chunk in chunks:
        for stamp, names in zip(chunk.timestamps, chunk.data):
            truth = image_set.describe(int(concepts[trial_of(stamp, onsets, t0)]))
            top1.append(names[0] == truth)
            top5.append(truth in list(names[:5]))
    return top1, top5


def scale_times(chunks: list) -> dict:
    """p50 and p99 of each scale's time (ms), from the generated images' traces."""
    times: dict[str, list[float]] = {}
    for chunk in chunks:
        for stage, enter, leave in chunk.trace:
            if stage.startswith("generate:"):
                times.setdefault(stage.split(":")[1], []).append((leave - enter) * 1e3)
    return {f"{scale}_p{q}_ms": float(np.percentile(v, q)) for scale, v in times.items()
            for q in (50, 99)}


def strips(images: list, ids: list, onsets: np.ndarray, concepts: np.ndarray, t0: float,
           folder: Path) -> Path | None:
    """One PNG per decoded trial in `folder` (shown | retrieved | each scale generated), and
    the first twelve stacked in `folder.png`, the path returned (None: nothing decoded)."""
    import cv2

    from edgert.methods.avde.node import encode_png

    folder.mkdir(parents=True, exist_ok=True)
    retrieved = {trial_of(s, onsets, t0): n[0] for c in ids for s, n in zip(c.timestamps, c.data)}
    names = {image_set.describe(c): c for c in range(len(image_set.CONCEPTS))}
    rows = []
    for chunk in images:
        k = trial_of(chunk.timestamps[0], onsets, t0)
        generated = decode_png(chunk.data[0, 0])
        side = generated.shape[0]
        shown = [image_set.render(int(concepts[k]))]
        if k in retrieved:
            shown.append(image_set.render(names[retrieved[k]]))
        left = decode_png(encode_png(shown, side // image_set.SIZE))
        gap = np.full((side, 4, 3), 255, np.uint8)
        row = np.concatenate([left, gap, generated], 1)
        cv2.imwrite(str(folder / f"trial-{k:03d}.png"), row[..., ::-1])
        rows.append(np.pad(row, ((0, 4), (0, 0), (0, 0)), constant_values=255))
    if not rows:
        return None
    grid = folder.with_suffix(".png")
    cv2.imwrite(str(grid), np.concatenate(rows[:12])[..., ::-1])
    return grid
