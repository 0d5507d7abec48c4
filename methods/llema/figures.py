"""Hit rate and Pareto hypervolume per search, over the grid."""
from __future__ import annotations

from pathlib import Path

from edgert.methods.plots import bars


def draw(result: dict, out: Path) -> list[Path]:
    return [bars(result, "search", ["hit_rate", "hypervolume"], out / "llema.searches.png",
                 "LLEMA: hits and Pareto hypervolume per search (surrogate oracle)")]
