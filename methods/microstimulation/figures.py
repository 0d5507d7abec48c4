"""The job's figures: both sheets' category maps with the sites, and predicted against
observed choice shifts."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.patches import Patch

from edgert.methods.plots import pyplot


def selectivity_maps(profiles: list[np.ndarray], sites: list[np.ndarray], targets: np.ndarray,
                     side: int, titles: list[str], path: Path) -> None:
    """Each unit coloured by its preferred digit, faded where its selectivity (max d') is
    weak; each site labelled with the digit it targets (patch sites in bold)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(profiles), figsize=(4.2 * len(profiles), 4.8))
    classes = len(profiles[0][0])  # the first `classes` sites are the patch centres
    for ax, p, s, title in zip(axes, profiles, sites, titles):
        strength = np.clip(p.max(1) / max(p.max(), 1e-9), 0, 1).reshape(side, side)
        rgba = plt.get_cmap("tab10")(p.argmax(1).reshape(side, side))
        rgba[..., 3] = 0.15 + 0.85 * strength
        ax.imshow(rgba, interpolation="nearest")
        for k, (unit, digit) in enumerate(zip(s, targets)):
            r, c = divmod(int(unit), side)
            ax.text(c, r, str(digit), ha="center", va="center", fontsize=9,
                    fontweight="bold" if k < classes else "normal",
                    color="k" if k < classes else "0.35",
                    bbox={"boxstyle": "circle,pad=0.15", "fc": "w", "alpha": 0.8})
        ax.set_title(title, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.legend(handles=[Patch(color=plt.get_cmap("tab10")(d), label=str(d))
                        for d in range(classes)], loc="lower center", ncol=classes,
               fontsize=8, title="preferred digit (faded: weakly selective)",
               title_fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def predicted_vs_observed(predicted: np.ndarray, observed: np.ndarray, patch: np.ndarray,
                          r: float, path: Path) -> None:
    """One point per site: the shift toward its target digit in model A (predicted) and at
    the mapped site of model B (observed)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.4, 4.2))
    ax.scatter(predicted[patch], observed[patch], label="patch centres", color="C3")
    ax.scatter(predicted[~patch], observed[~patch], label="random sites", color="C0")
    lim = [min(predicted.min(), observed.min(), 0), max(predicted.max(), observed.max(), 0)]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.axhline(0, color="0.7", lw=0.6)
    ax.axvline(0, color="0.7", lw=0.6)
    ax.set_xlabel("predicted shift toward target (model A)")
    ax.set_ylabel("observed shift toward target (model B)")
    ax.set_title(f"Pearson r = {r:.2f}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
