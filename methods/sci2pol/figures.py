"""How each score of the open-ended answers moves under each corruption."""
from __future__ import annotations

from pathlib import Path

from edgert.methods.plots import bars


def draw(result: dict, out: Path) -> list[Path]:
    return [bars(result, "responder", ["rouge_l", "token_f1", "embedding", "judge"],
                 out / "sci2pol.metrics.png",
                 "Sci2Pol: open-ended scores by responder and corruption", "score")]
