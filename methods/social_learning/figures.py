"""Deaths, moves to the first point, and knowledge across generations, per condition."""
from __future__ import annotations

from pathlib import Path

from edgert.methods.plots import pyplot
from edgert.methods.social_learning.job import Config

PANELS = (("deaths", "lives lost"), ("first_score", "moves to first point"),
          ("knowledge", "P(true rules)"))


def draw(result: dict, out: Path) -> list[Path]:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for entry in result["summary"].values():
        config = Config(**entry["config"])
        label = config.condition + ("" if config.lapse else ", full trust")
        gens = config.generations
        x = range(1, gens + 1)
        for ax, (metric, label) in zip(axes, PANELS):
            stats = [entry["metrics"][f"{metric}_g{k}"] for k in x]
            ax.errorbar(x, [s["mean"] for s in stats], [s["se"] for s in stats], capsize=2,
                        label=label)
            ax.set_xlabel("generation")
            ax.set_ylabel(label)
    axes[0].legend(fontsize=8)
    fig.suptitle("Social learning: iterated advice across generations (mean over 10 games)")
    fig.tight_layout()
    path = out / "social_learning.generations.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path]
