"""Figures of JanusVLN: top-down maps of paths taken against the expert's, and what memory
and step time do as an episode grows."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from edgert.methods.janusvln.simulate import CELL, FREE, KINDS, make_house

SCALING = {"janusvln": "JanusVLN, torch eager", "janusvln_ort": "JanusVLN, ONNX Runtime",
           "full_history": "full history (re-encoded)", "explicit_memory": "explicit memory"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def draw_map(ax, house_seed: int, expert: list, path: list, title: str) -> None:
    """One house from above: walls, landmarks in their colours, the expert's path (dashed)
    and the agent's (solid), its start (circle) and the goal's 1 m (ring)."""
    house = make_house(house_seed)
    rgb = np.repeat(np.where(house.grid == FREE, 0.97, 0.25)[..., None], 3, -1)
    for k, kind in enumerate(house.kinds):
        rgb[house.grid == 2 + k] = KINDS[kind]
    rows, cols = house.shape
    ax.imshow(rgb, extent=(0, cols * CELL, rows * CELL, 0), interpolation="nearest")
    expert, path = np.asarray(expert), np.asarray(path)
    ax.plot(expert[:, 0], expert[:, 1], "--", color="tab:green", lw=1.5, label="expert")
    ax.plot(path[:, 0], path[:, 1], "-", color="tab:blue", lw=1.5, label="agent")
    ax.plot(*path[0], "o", color="tab:blue", ms=5)
    ax.add_patch(_ring(expert[-1]))
    ax.set_title(title, fontsize=6)
    ax.set_xticks([])
    ax.set_yticks([])


def _ring(centre):
    from matplotlib.patches import Circle
    return Circle(tuple(centre), 1.0, fill=False, color="tab:red", lw=1)


def maps(records: list[dict], out: Path, limit: int = 6) -> list[Path]:
    """Up to `limit` episodes' maps in one PNG at `out` (none written without episodes)."""
    if not records:
        return []
    plt = _plt()
    records = records[:limit]
    cols = min(3, len(records))
    rows = (len(records) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.8 * rows), squeeze=False)
    for ax in axes.ravel()[len(records):]:
        ax.axis("off")
    for ax, r in zip(axes.ravel(), records):
        outcome = "success" if r.get("metrics", r).get("sr") else "failure"
        draw_map(ax, r["house"], r["expert"], r["path"],
                 f"{outcome}: {_wrap(r['instruction'])}")
    axes[0, 0].legend(fontsize=6, loc="lower left")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    return [out]


def _wrap(text: str, width: int = 40) -> str:
    words, lines = text.split(), [""]
    for w in words:
        if len(lines[-1]) + len(w) > width:
            lines.append("")
        lines[-1] += (" " if lines[-1] else "") + w
    return "\n".join(lines)


def figures(result: dict, out: Path) -> list[Path]:
    """`FILE.maps.png` (JanusVLN's first unseen episodes) and `FILE.scaling.png` (bytes held
    and p99 step time against episode length), beside `out`."""
    out = Path(out)
    paths = maps(result.get("examples", {}).get("janusvln", []), out.with_suffix(".maps.png"))
    scaling = result.get("scaling", {}).get("curves")
    if scaling:
        plt = _plt()
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
        for name, label in SCALING.items():
            if name not in scaling:
                continue
            s = scaling[name]
            left.plot(s["steps"], np.array(s["state_bytes"]) / 1e6, "o-", label=label, ms=3)
            timed = s["steps"][:len(s["p99_ms"])]
            right.plot(timed, s["p99_ms"], "o-", label=label, ms=3)
        for ax, what in ((left, "memory held between steps (MB)"),
                         (right, "p99 step time (ms)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("step of the episode")
            ax.set_ylabel(what)
            ax.grid(alpha=0.3)
        right.legend(fontsize=7)
        path = out.with_suffix(".scaling.png")
        fig.savefig(path, dpi=130, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths
