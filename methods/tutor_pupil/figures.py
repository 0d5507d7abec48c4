"""One cell's figure: the Tutor's correction size and every learner's error against how far
each sample breaks the Pupil's assumption; for the pendulum also the implied period ratio
against the exact one and the fitted series."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.plots import pyplot

STRAIN = {"pendulum": "amplitude theta0 (rad)", "projectile": "drag / gravity at launch",
          "digits": "template margin (> 0: Pupil wrong)"}


def cell(case: str, split, seen: dict, series: dict | None, path: Path) -> None:
    plt = pyplot()
    panels = 3 if series else 2
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.8))
    strain = split.strain
    axes[0].scatter(strain, seen["correction"], s=6, alpha=0.5)
    axes[0].set(xlabel=STRAIN[case], ylabel="size of the Tutor's correction",
                title="corrections where the Pupil breaks", yscale="log")
    bins = np.quantile(strain, np.linspace(0, 1, 9))
    mid = (bins[1:] + bins[:-1]) / 2
    which = np.clip(np.digitize(strain, bins[1:-1]), 0, len(mid) - 1)
    for kind in ("pupil", "tutor", "residual", "blackbox"):
        curve = [seen[kind][which == b].mean() for b in range(len(mid))]
        axes[1].plot(mid, curve, "o-", label=kind, ms=3)
    axes[1].set(xlabel=STRAIN[case], ylabel="error rate" if case == "digits" else
                "relative error", title="error by strain",
                yscale="linear" if case == "digits" else "log")
    axes[1].legend(fontsize=8)
    if series:
        ax = axes[2]
        ax.plot(series["theta"], series["exact"], "k-", lw=2, label="exact K(k) ratio")
        ax.plot(series["theta"], series["implied"], "--", label="Tutor: exp(delta / 2)")
        terms = " + ".join(f"{c:.4f} {n}" for n, c in series["terms"].items())
        ax.plot(series["theta"], series["fitted"], ":", label=f"fit: 1 + {terms}")
        ax.set(xlabel="amplitude theta0 (rad)", ylabel="T / T_small-angle",
               title="the correction read as physics")
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
