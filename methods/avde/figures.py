"""Figures of an AVDE evaluation: the decoded examples, and what each scale decides."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.avde.images import ATTRIBUTES


def figures(result: dict, out: Path) -> list[Path]:
    """`FILE.examples.png` (per held-out image: shown, retrieved, diffusion, then AVDE at
    each scale) and `FILE.scales.png` (attribute accuracy against scale), beside `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from edgert.methods.avde.node import decode_png

    out = Path(out)
    paths = []
    examples = [decode_png(e) for e in result.get("examples", [])]
    if examples:
        fig, axes = plt.subplots(len(examples), 1, figsize=(8, 1.1 * len(examples)))
        for ax, strip in zip(np.atleast_1d(axes), examples):
            ax.imshow(strip)
            ax.axis("off")
        scales = list(result["results"]["avde"].get("ms_per_scale", {}))
        np.atleast_1d(axes)[0].set_title("shown | retrieved | diffusion | AVDE at scale "
                                         + ", ".join(scales), fontsize=9)
        path = out.with_suffix(".examples.png")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    by_scale = result["results"]["avde"].get("scales")
    if by_scale:
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        sizes = list(by_scale)
        for name in ATTRIBUTES:
            ax.plot([int(s) for s in sizes], [by_scale[s][f"attr_{name}"] for s in sizes],
                    marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.set_xticks([int(s) for s in sizes], sizes)
        ax.set_xlabel("scale (token map side)")
        ax.set_ylabel("attribute right (held-out concepts)")
        ax.set_title("coarse to fine: what each scale decides")
        ax.legend(fontsize=8)
        path = out.with_suffix(".scales.png")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
