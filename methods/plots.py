"""Matplotlib without a display: figures are written to files on headless machines."""
from __future__ import annotations


def pyplot():
    """`matplotlib.pyplot` on the Agg backend, imported on first use (it is slow to import)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bars(result: dict, field: str, metrics: list[str], path, title: str,
         ylabel: str = "") -> "Path":
    """A batch result's configs as groups of bars (one per metric, mean ± se over seeds),
    each group named by the config `field`; written to `path`."""
    plt = pyplot()
    entries = [e for e in result["summary"].values() if all(m in e["metrics"] for m in metrics)]
    names = [str(e["config"][field]) for e in entries]
    width = 0.8 / len(metrics)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(names) * len(metrics) / 2 + 2), 3.6))
    for j, m in enumerate(metrics):
        mean = [e["metrics"][m]["mean"] for e in entries]
        se = [e["metrics"][m]["se"] for e in entries]
        ax.bar([i + (j - (len(metrics) - 1) / 2) * width for i in range(len(names))], mean,
               width, yerr=se, capsize=2, label=m)
    ax.set_xticks(range(len(names)), names, rotation=20)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(metrics) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
