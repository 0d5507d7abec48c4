"""AVDE -> one bundle folder that the live pipeline's three nodes share.

The folder is the encoder's bundle (EEG trial -> unit image embedding) with, inside it and
hashed by its manifest, `gallery.npz` (the embeddings, names and images retrieval answers
with) and `generator/{step,accumulate,decode}`, three bundles of their own: one scale of
next-scale prediction with the key/value cache as explicit input and output (run once per
scale), adding a token map to the feature map, and decoding a feature map to an image.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from edgert.export.bundle import Bundle
from edgert.export.onnx_export import export_bundle
from edgert.methods.avde import simulate
from edgert.methods.avde.generate import (STEP_OUTPUTS, Accumulate, Decode,
                                          shape_of)
from edgert.methods.avde.model import PATCH, EEGToImage
from edgert.methods.avde.train import Trained, train
from edgert.methods.avde.var import Step
from edgert.methods.cache import cached_bundle as shared_cached_bundle
from edgert.methods.cache import cached_checkpoint

QUICK_MINUTES = 4.0  # `edgert train avde --quick` on 2 cores
GALLERY = "gallery.npz"
GRAPHS = ("step", "accumulate", "decode")


class UnitEmbedding(nn.Module):
    """The stage-1 model with its output on the unit sphere, as retrieval compares it."""

    def __init__(self, aligner: EEGToImage):
        super().__init__()
        self.aligner = aligner

    def forward(self, eeg: torch.Tensor) -> torch.Tensor:
        e = self.aligner(eeg)  # broadcast division: F.normalize left the ONNX width symbolic
        return e / e.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def quick(folder: Path) -> Path:
    """The quick training run the demo and a bare `edgert export avde` use."""
    return train(folder, quick=True)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False
           ) -> Bundle:
    """Export a trained checkpoint (default: this machine's cached one, trained if absent)."""
    checkpoint = Path(checkpoint or cached_checkpoint("avde", quick, QUICK_MINUTES))
    trained = Trained.load(checkpoint)
    x = np.ascontiguousarray(trained.examples, np.float32)
    shape = shape_of(trained.var, trained.vq)
    preprocessing = {
        "rate_hz": simulate.RATE, "window_samples": PATCH, "layout": "channels_first",
        "channels": list(trained.channels), "units": "uV",
        "bandpass_hz": list(simulate.BANDPASS_HZ), "epoch_s": [0.0, simulate.EPOCH_S],
        "output": "embedding: (batch, dim) unit vectors in the image-embedding space",
        "avde": {"gallery": GALLERY, "generator": {g: f"generator/{g}" for g in GRAPHS},
                 "shape": shape, "image_encoder": trained.meta.get("image_encoder", "")},
    }
    bundle = export_bundle(UnitEmbedding(trained.aligner), {"eeg": torch.from_numpy(x[:1])},
                           out, name="avde", dynamic_axes={"eeg": {0: "batch"}},
                           output_names=["embedding"], preprocessing=preprocessing,
                           checkpoint=checkpoint, real_samples=[{"eeg": x[:1]}, {"eeg": x[1:4]}],
                           tolerance=1e-3, fp16=fp16, int8=int8)
    keep = np.sort(np.unique(trained.gallery_ids, return_index=True)[1])  # one per name
    images = trained.gallery[keep]
    embeddings = trained.images.embed(images)
    np.savez_compressed(bundle.file(GALLERY), embeddings=embeddings.astype(np.float32),
                        names=np.array(trained.gallery_ids)[keep],
                        images=(images * 255).round().astype(np.uint8))
    _export_generator(trained, embeddings, bundle.path / "generator")
    for name in (GALLERY, *(f"generator/{g}/manifest.json" for g in GRAPHS)):
        bundle.manifest.files[name] = ""  # hashed by save_manifest
    bundle.save_manifest()
    return Bundle.load(bundle.path)


def _export_generator(trained: Trained, conds: np.ndarray, folder: Path) -> None:
    var, vq = trained.var, trained.vq
    s = shape_of(var, vq)
    cond = torch.from_numpy(conds[:1])
    cache = torch.zeros(s["depth"], 2, 2, s["heads"], 1, s["head_dim"])
    inputs = torch.zeros(1, 4, s["dim"])
    export_bundle(Step(var), {"cond": cond, "inputs": inputs, "positions": torch.arange(1, 5),
                              "cache": cache, "guidance": torch.ones(1)},
                  folder / "step", name="avde-step", output_names=list(STEP_OUTPUTS),
                  dynamic_axes={"inputs": {1: "tokens"}, "positions": {0: "tokens"},
                                "cache": {4: "past"}}, tolerance=1e-3)
    f_hat = torch.zeros(1, s["dim"], s["side"], s["side"])
    export_bundle(Accumulate(vq), {"f_hat": f_hat, "index": torch.zeros(1, 2, 2, dtype=torch.long)},
                  folder / "accumulate", name="avde-accumulate", output_names=["f_hat_out"],
                  dynamic_axes={"index": {1: "rows", 2: "columns"}}, tolerance=1e-3)
    export_bundle(Decode(vq), {"f_hat": f_hat}, folder / "decode", name="avde-decode",
                  output_names=["image"], dynamic_axes={"f_hat": {0: "batch"}}, tolerance=1e-3)


def cached_bundle() -> Path:
    """This machine's own bundle if trained here, else the shipped one."""
    return shared_cached_bundle("avde", quick, export, QUICK_MINUTES)
