"""The ODD student -> bundle: (image, question, options) -> (option scores, embedding), with the
image size, the batch and the number of options dynamic, so one session serves the base view,
the high-resolution view, paraphrases and sub-questions. The router (temperatures, gain
models, threshold, costs) and the retrieval memory are saved beside the bundle."""
from __future__ import annotations

from pathlib import Path

import torch

from edgert.export.bundle import Bundle
from edgert.export.onnx_export import export_bundle
from edgert.methods.bolt.data import tensors
from edgert.methods.bolt.scene import BASE, HIGH
from edgert.methods.bolt.train import Config, Trained, target_sets, train
from edgert.methods.cache import cached_checkpoint
from edgert.methods.cache import cached_bundle as shared_cached_bundle

ROUTER = "router.json"
MEMORY = "memory.npz"
QUICK_MINUTES = 2.5  # `edgert train bolt --quick` on 2 cores


def quick(folder: Path) -> Path:
    """The quick training run the demo and a bare `edgert export bolt` use."""
    return train(folder, quick=True)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False,
           model: str = "odd") -> Bundle:
    """Export a student (default the ODD one) of a checkpoint (default: this machine's)."""
    checkpoint = Path(checkpoint or cached_checkpoint("bolt", quick, QUICK_MINUTES))
    trained = Trained.load(checkpoint)
    scorer = trained.models[model]
    qa = target_sets(trained.config if trained.config.data else Config.quick())["val"]
    real = []
    for size, part in ((BASE, slice(0, 1)), (HIGH, slice(1, 4))):
        t = tensors(qa.subset(range(part.start, part.stop)), size, trained.text)
        real.append({"image": t["image"], "question": t["question"], "options": t["options"]})
    example = {k: torch.from_numpy(v) for k, v in real[0].items()}
    preprocessing = {"layout": "channels_first", "base_size": BASE, "high_size": HIGH,
                     "scale": "rgb / 255", **trained.text.to_dict(),
                     "score": "summed log-likelihood of each option's answer words"}
    return export_bundle(scorer, example, out, name=f"bolt-{model}",
                         dynamic_axes={"image": {0: "batch", 2: "height", 3: "width"},
                                       "question": {0: "batch"},
                                       "options": {0: "batch", 1: "options"}},
                         output_names=["scores", "embedding"], preprocessing=preprocessing,
                         checkpoint=checkpoint, real_samples=real, fp16=fp16, int8=int8,
                         tolerance=1e-3)


def cached_bundle() -> Path:
    """This machine's own ODD-student bundle if trained here, else the shipped one."""
    return shared_cached_bundle("bolt", quick, export, QUICK_MINUTES)
