"""BOLT's figures, drawn from the JSON `evaluate` writes."""
from __future__ import annotations

from pathlib import Path


def figures(result: dict, out: Path) -> list[Path]:
    """Accuracy against average cost: the router's sweep, each fixed action on a growing
    share of requests, random, and the operating points at the routed cost; beside `out`."""
    curve, results, path = result["curve"], result["results"], Path(out).with_suffix(".png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curve.items():
        x, y = zip(*sorted(points))
        ax.plot(x, y, "-o" if name == "routed" else "--", ms=3, label=name)
    for name in ("never", "always_hr", "always_rag", "always_qd", "random", "routed"):
        r = results[name]
        ax.scatter(r["avg_cost"], r["accuracy"], marker="*" if name == "routed" else "x",
                   s=80, zorder=3)
        ax.annotate(name, (r["avg_cost"], r["accuracy"]), fontsize=7)
    ax.set_xlabel("average extra cost per request (first passes)")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]
