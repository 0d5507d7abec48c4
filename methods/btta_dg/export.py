"""SincAdaptNet -> bundle: sinc kernels baked into a plain convolution, source statistics of
the adaptation in the manifest, and the cached bundle the demo and `pipelines/bci.yaml` use."""
from __future__ import annotations

from pathlib import Path

import torch

from export.bundle import Bundle
from export.onnx_export import export_bundle
from methods.btta_dg import synth
from methods.btta_dg.cache import default_folder
from methods.btta_dg.model import bake
from methods.btta_dg.train import CHECKPOINT, EPOCH, Trained, epoch, train

BANDPASS_HZ = (4.0, 40.0)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False
           ) -> Bundle:
    """Export a trained checkpoint (default: this machine's cached one, trained if absent)."""
    trained = Trained.load(checkpoint or _checkpoint())
    model = trained.model
    rate = float(trained.meta.get("rate", synth.RATE))
    subject = synth.make_subject(999)
    x, _ = synth.trials(subject, synth.make_session(subject, 1), 8, seed=0)
    x = epoch(x)[:, :model.config["channels"], :model.config["samples"]]
    real = [{"eeg": x[:1]}, {"eeg": x[1:4]}, {"eeg": x[4:]}]
    bands = trained.model.bands()
    preprocessing = {
        "rate_hz": rate, "window_samples": model.config["samples"], "layout": "channels_first",
        "channels": list(synth.CHANNELS), "units": "uV", "bandpass_hz": list(BANDPASS_HZ),
        "epoch_s": list(EPOCH), "output": "probs: (batch, steps, classes), one softmax per step",
        "btta_dg": {"sources": {k: v.to_dict() for k, v in trained.sources.items()},
                    "sinc_bands_hz": None if bands is None else bands.tolist()},
    }
    return export_bundle(bake(model), {"eeg": torch.from_numpy(x[:1])}, out, name="btta_dg",
                         dynamic_axes={"eeg": {0: "batch"}}, output_names=["probs"],
                         labels=trained.labels, preprocessing=preprocessing,
                         checkpoint=Path(checkpoint or _checkpoint()), real_samples=real,
                         fp16=fp16, int8=int8)


def _checkpoint() -> Path:
    path = default_folder() / CHECKPOINT
    return path if path.exists() else train(default_folder())


def cached_bundle(quick: bool = False) -> Path:
    """The bundle of this machine's trained model, training and exporting on first use and
    re-exporting when the checkpoint is newer than the bundle."""
    folder = default_folder()
    checkpoint = folder / CHECKPOINT
    if not checkpoint.exists():
        train(folder, quick=quick)
    bundle = folder / "bundle"
    manifest = bundle / "manifest.json"
    if not manifest.exists() or manifest.stat().st_mtime < checkpoint.stat().st_mtime:
        export(bundle, checkpoint)
    return bundle

