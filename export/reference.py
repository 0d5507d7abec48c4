"""A ShallowConvNet-sized EEG decoder, to exercise bundles before the methods arrive.

ShallowConvNet (Schirrmeister et al., 2017): temporal conv, spatial conv, batch norm, square,
average pool, log, dropout, linear. Input (batch, 22 channels, 250 samples): 1 s at 250 Hz of
the BCI Competition IV 2a montage, each channel z-scored; 4 motor-imagery classes.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from scipy import signal
from torch import nn

from edgert.export.bundle import Bundle, ExportError
from edgert.export.onnx_export import export_bundle
from edgert.export.checkpoint import load_checkpoint

CHANNELS = ("Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4", "C6",
            "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz")
LABELS = ("left_hand", "right_hand", "feet", "tongue")
RATE = 250.0
SAMPLES = 250
PREPROCESSING = {"rate_hz": RATE, "window_samples": SAMPLES, "channels": list(CHANNELS),
                 "units": "uV", "bandpass_hz": [4.0, 38.0],
                 "standardize": "z-score each channel over the window"}


class ShallowConvNet(nn.Module):
    def __init__(self, channels: int = len(CHANNELS), samples: int = SAMPLES,
                 classes: int = len(LABELS), filters: int = 40, dropout: float = 0.5):
        super().__init__()
        self.temporal = nn.Conv2d(1, filters, (1, 25))
        self.spatial = nn.Conv2d(filters, filters, (channels, 1), bias=False)
        self.norm = nn.BatchNorm2d(filters)
        self.pool = nn.AvgPool2d((1, 75), stride=(1, 15))
        self.dropout = nn.Dropout(dropout)
        pooled = (samples - 25 + 1 - 75) // 15 + 1
        self.classify = nn.Linear(filters * pooled, classes)

    def forward(self, eeg: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.spatial(self.temporal(eeg.unsqueeze(1))))
        x = torch.log(torch.clamp(self.pool(x * x), min=1e-6))
        return self.classify(self.dropout(x).flatten(1))


def reference_model(seed: int = 0) -> ShallowConvNet:
    """Untrained: random weights from a fixed seed, so every export is the same model."""
    torch.manual_seed(seed)
    return ShallowConvNet().eval()


def synthetic_eeg(windows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(windows, 22, 250) float32 z-scored windows and their classes: 1/f background and a
    10 Hz mu rhythm that weakens over the motor cortex of the imagined limb."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(LABELS), windows)
    background = signal.lfilter([1.0], [1.0, -0.95],
                                rng.standard_normal((windows, len(CHANNELS), SAMPLES)), axis=-1)
    t = np.arange(SAMPLES) / RATE
    mu = np.sin(2 * np.pi * 10 * t + rng.uniform(0, 2 * np.pi, (windows, 1, 1)))
    gain = np.ones((windows, len(CHANNELS), 1))
    for w, label in enumerate(labels):
        if LABELS[label] == "tongue":
            gain[w] = 0.6
        else:
            gain[w, CHANNELS.index({"left_hand": "C4", "right_hand": "C3", "feet": "Cz"}[
                LABELS[label]])] = 0.3
    eeg = 3 * background + 6 * gain * mu
    eeg = (eeg - eeg.mean(-1, keepdims=True)) / eeg.std(-1, keepdims=True)
    return eeg.astype(np.float32), labels


def export_reference(out: Path, fp16: bool = False, int8: bool = False,
                     checkpoint: Path | None = None, evaluate: Callable | None = None) -> Bundle:
    """Export the reference model, untrained unless `checkpoint` (a state_dict) is given,
    checked on synthetic EEG windows (batches 1, 3 and 4) as its real samples."""
    model = reference_model()
    if checkpoint is not None:
        fix = "give one saved with torch.save(model.state_dict(), ...)"
        weights = load_checkpoint(checkpoint, "a state_dict of the reference ShallowConvNet", fix)
        try:
            model.load_state_dict(weights)
        except RuntimeError as e:
            raise ExportError(f"{checkpoint}: not a state_dict of the reference ShallowConvNet "
                              f"({str(e).splitlines()[0]}); {fix}") from None
    eeg, _ = synthetic_eeg(8, seed=1)
    real = [{"eeg": eeg[:1]}, {"eeg": eeg[1:4]}, {"eeg": eeg[4:]}]
    return export_bundle(model, {"eeg": torch.from_numpy(eeg[:1])}, out, checkpoint=checkpoint,
                         name="reference", dynamic_axes={"eeg": {0: "batch"}},
                         output_names=["logits"], labels=LABELS, preprocessing=PREPROCESSING,
                         real_samples=real, fp16=fp16, int8=int8, evaluate=evaluate)
