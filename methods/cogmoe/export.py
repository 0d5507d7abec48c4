"""CogMoE stage 2 -> bundle: one input of tokens, one output vector of the load probabilities
and the gate weights (overall and per sensor), so the `infer` node publishes both."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from edgert.export.bundle import Bundle
from edgert.export.onnx_export import export_bundle
from edgert.methods.cache import cached_checkpoint
from edgert.methods.cache import cached_bundle as shared_cached_bundle
from edgert.methods.cogmoe import features as feats
from edgert.methods.cogmoe.model import EXPERTS
from edgert.methods.cogmoe.simulate import MODALITIES, degrade, simulate
from edgert.methods.cogmoe.train import LABELS, Trained, train

OUTPUTS = LABELS + tuple(f"gate_{e}" for e in EXPERTS) + tuple(
    f"gate_{m}_{e}" for m in MODALITIES for e in EXPERTS)


def sample_tokens(count: int, seed: int = 0) -> np.ndarray:
    """Stage-1 tokens of a short simulated drive with damage, for parity checks."""
    drive = degrade(simulate(int(feats.WINDOW_S) * count, seed + 500), "moderate", seed)
    windows, _ = feats.drive_windows(drive)
    return np.stack([feats.window_input(w, feats.RATES[feats.REFERENCE])[0] for w in windows])


QUICK_MINUTES = 0.5  # `edgert train cogmoe --quick` on 2 cores


def quick(folder: Path) -> Path:
    """The quick training run the demo and a bare `edgert export cogmoe` use."""
    return train(folder, quick=True)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False
           ) -> Bundle:
    """Export a trained checkpoint (default: this machine's cached one, trained if absent)."""
    checkpoint = Path(checkpoint or cached_checkpoint("cogmoe", quick, QUICK_MINUTES))
    model = Trained.load(checkpoint).model
    x = sample_tokens(4)
    real = [{"tokens": x[:1]}, {"tokens": x[1:]}]
    preprocessing = {
        "layout": "channels_last", "window_s": feats.WINDOW_S, "step_s": feats.STEP_S,
        "reference": feats.REFERENCE, "sensors": list(MODALITIES),
        "aligned_channels": list(feats.ALIGNED_CHANNELS),
        "tokens": "sensors x steps rows of band log-powers, level, masked fraction, then "
                  "the sensor's quality (snr, present, autocorrelation), absolute then relative "
                  "to the other sensors",
    }
    return export_bundle(model, {"tokens": torch.from_numpy(x[:1])}, out, name="cogmoe",
                         dynamic_axes={"tokens": {0: "batch"}}, output_names=["estimate"],
                         labels=OUTPUTS, preprocessing=preprocessing, checkpoint=checkpoint,
                         real_samples=real, fp16=fp16, int8=int8, tolerance=1e-4)


def cached_bundle() -> Path:
    """This machine's own bundle if trained here, else the shipped one."""
    return shared_cached_bundle("cogmoe", quick, export, QUICK_MINUTES)
