"""The grid's accuracy per tuning mode, split into the queries the prompt alone can solve and
the ones that also need the weights to change."""
from __future__ import annotations

from pathlib import Path

from edgert.methods.plots import bars


def draw(result: dict, out: Path) -> list[Path]:
    return [bars(result, "mode", ["acc", "acc_plain", "acc_shift"], out / "metatuner.modes.png",
                 "MetaTuner: exact-match accuracy by tuning mode", "accuracy")]
