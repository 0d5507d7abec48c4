"""One cell's figure: predicted against true values on the test scaffolds, conjugated
molecules marked."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.plots import pyplot


def parity(truth: np.ndarray, pred: np.ndarray, conjugated: np.ndarray, title: str,
           path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.4, 4.2))
    for mask, label in ((~conjugated, "not conjugated"), (conjugated, "conjugated")):
        ax.scatter(truth[mask], pred[mask], s=8, alpha=0.6, label=label)
    lo, hi = float(min(truth.min(), pred.min())), float(max(truth.max(), pred.max()))
    ax.plot([lo, hi], [lo, hi], "k:", lw=1)
    ax.set(xlabel="true", ylabel="predicted", title=title)
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
