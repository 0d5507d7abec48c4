"""A small real batch job for the runner's tests: Monte Carlo estimates of pi."""
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from edgert.runtime.plugin import DataError, Method


class Config(BaseModel):
    samples: int = 1000
    fail: bool = False
    data: str | None = None


def run(config: dict, seed: int, out: Path) -> dict:
    cfg = Config(**config)
    if cfg.data and not Path(cfg.data).exists():
        raise DataError(f"{cfg.data}: no such file (give data: PATH to a file that exists)")
    if cfg.fail:
        raise ValueError(f"asked to fail (seed {seed})")
    xy = np.random.default_rng(seed).random((cfg.samples, 2))
    estimate = 4 * np.mean((xy ** 2).sum(1) <= 1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 3))
    ax.scatter(*xy[:200].T, s=2)
    fig.savefig(Path(out) / "points.png")
    plt.close(fig)
    return {"estimate": estimate, "abs_error": abs(estimate - np.pi)}


PI = Method(name="pi", kind="batch", run=run, config=Config,
            grid=lambda quick: [{"samples": 200 if quick else 20000}])
