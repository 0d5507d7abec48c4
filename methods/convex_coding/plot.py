"""The cell's figure: convex optimum against gradient-descent starts, recovered against true
tunings at the widest and narrowest source angle, identifiability against angle, and
modularity against source correlation with the range lost or kept."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.convex_coding.measures import matched_correlation


def figure(runs: dict[str, list[float]], rows: list[dict], examples: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 4, figsize=(15, 3.4))
    _objectives(ax[0], runs)
    _tunings(ax[1], examples)
    ident = [r for r in rows if r["experiment"] == "identifiability"]
    ax[2].plot([r["setting"] for r in ident], [r["value"] for r in ident], "o-")
    ax[2].set_xscale("log")
    ax[2].set(xlabel="angle between source directions (deg)", ylabel="matched |corr|",
              title="identifiability of tunings")
    for kind in ("range_lost", "range_kept"):
        sel = [r for r in rows if r["experiment"] == f"modularity.{kind}"]
        ax[3].plot([r["correlation"] for r in sel], [r["value"] for r in sel], "o-", label=kind)
    ax[3].set(xlabel="source correlation", ylabel="modularity", ylim=(-0.05, 1.05),
              title="modular vs mixed")
    ax[3].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _objectives(ax, runs: dict[str, list[float]]) -> None:
    """Each descent's excess over the convex optimum, in percent (the convex Q is a lower
    bound for non-negative codes, the exact optimum for linear ones)."""
    for i, name in enumerate(("linear", "nonneg")):
        best = runs[f"{name}_convex"][0]
        excess = 100 * (np.array(runs[name]) / best - 1)
        ax.scatter(np.full(len(excess), i), excess, color="C1", alpha=0.7)
    ax.axhline(0.0, color="C0", label="convex optimum (Q)")
    ax.set_xticks([0, 1], ["linear", "non-negative"])
    ax.set_xlim(-0.5, 1.5)
    ax.set(ylabel="descent objective above convex (%)", title="gradient-descent starts")
    ax.legend(fontsize=8)


def _tunings(ax, examples: dict) -> None:
    truth = examples["truth"]
    for key, marker in (("wide", "o"), ("narrow", "x")):
        z = examples[key]
        for k in range(len(truth)):
            best = max(range(len(z)), key=lambda j: abs(np.corrcoef(truth[k], z[j])[0, 1]))
            ax.scatter(truth[k], z[best] / max(z[best].max(), 1e-12), s=6, marker=marker,
                       label=f"{key} angle, source {k + 1}")
    ax.set(xlabel="true tuning", ylabel="best-matched recovered unit (scaled)",
           title=f"recovered tunings (wide {matched_correlation(examples['wide'], truth):.2f}, "
                 f"narrow {matched_correlation(examples['narrow'], truth):.2f})")
    ax.legend(fontsize=6)
