"""One cell's figure: every pose's RMSD to the crystal per complex, PB-valid poses filled,
the top-ranked pose ringed."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.plots import pyplot


def rmsd(rows: list[dict], method: str, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for x, row in enumerate(rows):
        r, ok = np.array(row["rmsd"]), np.array(row["pb_valid"])
        jitter = x + np.linspace(-0.2, 0.2, len(r))
        ax.scatter(jitter[ok], r[ok], s=18, color="tab:green", label="PB-valid" if x == 0
                   else None)
        ax.scatter(jitter[~ok], r[~ok], s=18, facecolors="none", edgecolors="tab:red",
                   label="fails a PoseBusters check" if x == 0 else None)
        ax.scatter([jitter[0]], [r[0]], s=90, facecolors="none", edgecolors="black",
                   label="top-ranked" if x == 0 else None)
    ax.axhline(2.0, color="grey", ls=":", lw=1)
    ax.set(xticks=range(len(rows)), ylabel="heavy-atom RMSD to crystal (A)",
           title=f"{method}: redocking", yscale="log")
    ax.set_xticklabels([r["complex"] for r in rows], rotation=30, fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
