"""BTTA-DG's figures, drawn from the JSON `evaluate` writes and from the live demo's
metrics."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.evaluate import Config


def figures(result: dict, out: Path) -> list[Path]:
    """The sinc layer's learned bands (against each synthetic user's true mu and beta bands,
    where the users are simulated), and, on a user's recordings, accuracy by variant; drawn
    from `evaluate`'s result, beside `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(out).with_suffix(".bands.png")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if "data" not in result:
        cfg = Config(**result["config"])
        for s in range(1, cfg.subjects + 1):
            for name, (lo, hi) in synth.true_bands(synth.make_subject(s, cfg.shift)).items():
                ax.axvspan(lo, hi, color="tab:orange" if name == "mu" else "tab:green",
                           alpha=0.08)
        ax.set_title("learned bands (blue); users' true mu (orange) and beta (green) bands")
    else:
        ax.set_title("learned bands on your recordings")
    for i, (lo, hi) in enumerate(result["learned_bands_hz"]):
        ax.plot([lo, hi], [i, i], lw=5, color="tab:blue")
    ax.set_xlabel("Hz")
    ax.set_ylabel("sinc filter")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [path] + ([variants(result, Path(out).with_suffix(".accuracy.png"))]
                     if "data" in result else [])


def variants(result: dict, path: Path) -> Path:
    """Online accuracy of every variant on the held-out recordings, against chance."""
    import matplotlib.pyplot as plt

    names = list(result["results"])
    acc = [result["results"][n]["accuracy"] for n in names]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.barh(names, acc, color=["tab:blue" if n == "btta_dg" else "tab:gray" for n in names])
    ax.axvline(1 / len(result["data"]["labels"]), color="k", ls="--", lw=1, label="chance")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("online accuracy, held-out recordings")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def block_accuracy(m: dict, path: Path) -> Path:
    """Online accuracy per block of trials, adapted, aligned only and unadapted, against
    chance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, label in (("block_accuracy", "adapted (BTTA-DG)"),
                       ("block_accuracy_alignment_only", "aligned network alone"),
                       ("block_accuracy_no_adaptation", "no adaptation (decoder trained on "
                                                        "unaligned trials)")):
        ax.plot(np.arange(1, len(m[key]) + 1), m[key], marker="o", label=label)
    ax.axhline(1 / len(synth.LABELS), color="grey", lw=0.8, ls="--", label="chance")
    ax.set_xlabel(f"block of {m['block_trials']} trials")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("online accuracy")
    ax.set_ylim(0, 1)
    ax.set_title("a new user, decoded live")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
