"""The job's figures: one network's layers (firing rate, E/I balance), and over the grid,
accuracy and the last hidden layer's firing rate against depth for every kind."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.plots import pyplot


def layers(seen: dict, title: str, path: Path) -> None:
    """Firing rate per hidden layer; for E-I circuits also I/E current ratio and correlation."""
    plt = pyplot()
    panels = 2 if "ei_ratio" in seen else 1
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.4), squeeze=False)
    depth = np.arange(1, len(seen["rates"]) + 1)
    axes[0, 0].bar(depth, seen["rates"], color="tab:blue")
    axes[0, 0].set(xlabel="hidden layer", ylabel="firing rate (spikes/unit/step)",
                   title="activity")
    if panels == 2:
        ax = axes[0, 1]
        at = np.arange(1, len(seen["ei_ratio"]) + 1)
        ax.plot(at, seen["ei_ratio"], "o-", label="inhibitory / excitatory current")
        ax.plot(at, seen["ei_corr"], "s-", label="E-I correlation across samples")
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set(xlabel="layer", title="balance", ylim=(min(0, np.nanmin(seen["ei_corr"])), 1.3))
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def overview(result: dict, out: Path) -> list[Path]:
    """From `edgert batch`'s result: accuracy and last-layer rate against depth, per dataset
    and kind (mean +- se over seeds) -> [the figure's path]."""
    plt = pyplot()
    entries = [e for e in result["summary"].values() if "accuracy" in e["metrics"]]
    sets = sorted({e["config"]["dataset"] for e in entries})
    if not sets:
        return []
    fig, axes = plt.subplots(2, len(sets), figsize=(5 * len(sets), 6.5), squeeze=False)
    for col, name in enumerate(sets):
        for kind in dict.fromkeys(e["config"]["kind"] for e in entries):
            rows = sorted((e for e in entries if e["config"]["dataset"] == name and
                           e["config"]["kind"] == kind), key=lambda e: e["config"]["depth"])
            depth = [e["config"]["depth"] for e in rows]
            for row, metric in enumerate(("accuracy", "rate_last")):
                m = [e["metrics"][metric]["mean"] for e in rows]
                se = [e["metrics"][metric]["se"] for e in rows]
                axes[row, col].errorbar(depth, m, se, marker="o", capsize=3, label=kind)
        axes[0, col].set(title=name, ylabel="test accuracy", ylim=(0, 1))
        axes[1, col].set(xlabel="depth (weight layers)", ylabel="last hidden layer rate")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    path = Path(out) / "ei_snn.depth.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
