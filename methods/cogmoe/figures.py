"""CogMoE's figures, drawn from the JSON `evaluate` writes."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.cogmoe.evaluate import LEVELS


def figures(result: dict, out: Path) -> list[Path]:
    """F1 of every variant against degradation level; beside it, CogMoE's lead over each
    baseline with its 90 % interval over test drives; beside `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results, gap = result["results"], result["gaps"]
    fig, (ax, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    color = {name: f"C{k}" for k, name in enumerate(results)}  # one colour per variant
    for name, by_level in results.items():
        ax.plot(LEVELS, [by_level[level]["f1"] for level in LEVELS], marker="o", label=name,
                color=color[name])
    ax.set_ylabel("F1 (high load)")
    ax.set_title("cognitive load F1 as sensor quality falls")
    ax.legend(fontsize=8)
    x = np.arange(len(LEVELS))
    for k, (name, by_level) in enumerate(gap.items()):
        mid = np.array([by_level[level]["f1"] for level in LEVELS])
        lo, hi = np.array([by_level[level]["ci90"] for level in LEVELS]).T
        offset = 0.08 * (k - (len(gap) - 1) / 2)  # markers side by side, centred on the level
        right.errorbar(x + offset, mid, yerr=[mid - lo, hi - mid], marker="o", capsize=3,
                       label=f"vs {name}", color=color[name])
    right.axhline(0, color="grey", lw=0.8)
    right.set_xticks(x, LEVELS)
    right.set_ylabel("CogMoE F1 minus baseline")
    right.set_title("CogMoE's lead (90 % interval over test drives)")
    right.legend(fontsize=8)
    fig.tight_layout()
    path = Path(out).with_suffix(".f1.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]
