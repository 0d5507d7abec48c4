"""SincAdaptNet -> bundle: sinc kernels baked into a plain convolution, source statistics of
the adaptation in the manifest, and the cached bundle the demo and `pipelines/bci.yaml` use."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from edgert.export.bundle import Bundle
from edgert.export.onnx_export import export_bundle
from edgert.runtime.nodes.score import cue_pattern
from edgert.methods.btta_dg import synth
from edgert.methods.cache import cached_checkpoint
from edgert.methods.cache import cached_bundle as shared_cached_bundle
from edgert.methods.btta_dg.model import bake
from edgert.methods.btta_dg.train import BANDPASS_HZ, BASELINE, EPOCH, Trained, epoch, train

QUICK_MINUTES = 0.5  # `edgert train btta_dg --quick` on 2 cores


def quick(folder: Path) -> Path:
    """The quick training run the demo and a bare `edgert export btta_dg` use."""
    return train(folder, quick=True)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False
           ) -> Bundle:
    """Export a trained checkpoint (default: this machine's cached one, trained if absent);
    the no-adaptation decoder trained beside it goes into the sub-bundle `baseline/`."""
    checkpoint = Path(checkpoint or cached_checkpoint("btta_dg", quick, QUICK_MINUTES))
    bundle = export_one(Trained.load(checkpoint), out, checkpoint, fp16, int8)
    baseline = checkpoint.parent / BASELINE
    if baseline.exists():
        export_one(Trained.load(baseline), out / "baseline", baseline, fp16, int8)
        bundle.manifest.files["baseline/manifest.json"] = ""  # hashed by save_manifest
        bundle.save_manifest()
    return Bundle.load(bundle.path)


def export_one(trained: Trained, out: Path, checkpoint: Path, fp16: bool, int8: bool
               ) -> Bundle:
    model = trained.model
    rate = float(trained.meta.get("rate", synth.RATE))
    x = trained.examples
    if x is None:
        subject = synth.make_subject(999)
        x, _ = synth.trials(subject, synth.make_session(subject, 1), 8, seed=0)
        x = epoch(x)
    x = np.ascontiguousarray(x, np.float32)
    real = [{"eeg": part} for part in (x[:1], x[1:4], x[4:]) if len(part)]
    bands = trained.model.bands()
    preprocessing = {
        "rate_hz": rate, "window_samples": model.config["samples"], "layout": "channels_first",
        "channels": trained.meta.get("channels", list(synth.CHANNELS)), "units": "uV",
        "bandpass_hz": list(BANDPASS_HZ),
        "epoch_s": list(EPOCH), "output": "probs: (batch, steps, classes), one softmax per step",
        "btta_dg": {"sources": {k: v.to_dict() for k, v in trained.sources.items()},
                    "sinc_bands_hz": None if bands is None else bands.tolist()},
    }
    if trained.meta.get("recording"):
        preprocessing["recording"] = trained.meta["recording"]
        preprocessing["pipeline"] = {"bci": live_sets(trained.meta["recording"])}
    name = "btta_dg" if trained.meta.get("aligned", True) else "btta_dg-baseline"
    return export_bundle(bake(model), {"eeg": torch.from_numpy(x[:1])}, out, name=name,
                         dynamic_axes={"eeg": {0: "batch"}}, output_names=["probs"],
                         labels=trained.labels, preprocessing=preprocessing,
                         checkpoint=checkpoint, real_samples=real,
                         fp16=fp16, int8=int8)


def live_sets(recording: dict) -> dict:
    """The `--set`s of `pipelines/bci.yaml` that a bundle of a user's recordings carries, so
    that `--set adapt.bundle=DIR` alone runs it on the same kind of live streams: this
    bundle everywhere, the EEG stream and the channels it was trained on, and the cue stream
    and its markers."""
    sets = {f"{node}.bundle": "{bundle}" for node in ("decoder", "adapt")}
    sets["eeg.channels"] = recording["channels"]
    if recording.get("eeg_stream"):
        sets["eeg.name"] = recording["eeg_stream"]["name"]
    if recording.get("cue_stream"):
        sets["markers.name"] = recording["cue_stream"]["name"]
        sets["markers.type"] = recording["cue_stream"]["type"]
    if recording.get("cues"):
        sets["epoch.pattern"] = cue_pattern(recording["cues"])
        sets["score.classes"] = recording["cues"]
    return sets


def cached_bundle() -> Path:
    """This machine's own bundle if trained here, else the shipped one."""
    return shared_cached_bundle("btta_dg", quick, export, QUICK_MINUTES)
