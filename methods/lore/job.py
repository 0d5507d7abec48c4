"""One cell of the lore job: a perceptual space of known dimension, a budget of noisy triplets,
LORE (Schatten-p, p < 1) and the nuclear norm (p = 1) fitted by IRSVT with a weight chosen on
validation triplets, and cblearn's SOE and t-STE given the true and a large dimension.

Metrics:
- `true_dim`, `triplets`: the space's dimension and the training budget.
- `lore.rank`, `nuclear.rank`: eigenvalues of K above `rank_tol` of the largest, the estimated
  dimension; `*.rank_correct` is 1 when it equals `true_dim` (its mean is a recovery rate);
  `*.lam`: the chosen weight, as a fraction of the weight that zeroes K.
- `<method>.accuracy`: share of held-out triplets (answered by the same noisy oracle) the
  embedding answers alike, for lore, nuclear, soe_true, soe_large, tste_true, tste_large;
  `oracle.accuracy` is the true space's own score, the ceiling the noise leaves.
- `soe_large.rank`, `tste_large.rank`: the rank the baselines use when given `large_dim`.
The cblearn metrics are absent when the peer environment is not set up (see setup_peer.sh).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field, model_validator

from edgert.methods.lore.data import Noise, ask, budget, space
from edgert.methods.lore.embed import accuracy, gram_of, rank
from edgert.methods.lore.fit import Settings, fit
from edgert.methods.lore.peer import cblearn_embeddings
from edgert.methods.plots import pyplot

BASELINES = ("soe_true", "soe_large", "tste_true", "tste_large")


class Config(BaseModel):
    n: int = Field(40, ge=6)
    dim: int = Field(3, ge=1)
    budget: float = Field(2.0, gt=0)  # training triplets, as a multiple of n d log n
    noise: Noise = "logistic"
    level: float = Field(0.05, gt=0)  # logistic temperature, or flip probability
    test: int = Field(2000, ge=10)
    p: float = Field(0.5, gt=0, lt=1)
    eps: float = Field(1.0, gt=0)
    path: list[float] = Field([0.8, 0.6, 0.4, 0.3, 0.2, 0.1, 0.05], min_length=1)
    val: float = Field(0.2, gt=0, lt=1)
    iters: int = Field(300, ge=1)
    rank_tol: float = Field(0.02, gt=0, lt=1)
    large_dim: int = Field(10, ge=1)

    @model_validator(mode="after")
    def _flip_below_half(self) -> "Config":
        if self.noise == "flip" and self.level >= 0.5:
            raise ValueError("a flip probability of 0.5 or more carries no information")
        return self


def grid(quick: bool) -> list[dict]:
    if quick:
        return [Config(dim=d, budget=b).model_dump() for d in (2, 3, 5) for b in (1.0, 4.0)] + \
            [Config(dim=3, budget=4.0, noise="flip", level=0.1).model_dump()]
    return [Config(n=60, dim=d, budget=b, noise=noise, level=level).model_dump()
            for noise, level in (("logistic", 0.05), ("flip", 0.1))
            for d in (2, 3, 4, 5) for b in (0.5, 1.0, 2.0, 4.0, 8.0)]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    rng = np.random.default_rng(seed)
    x = space(cfg.n, cfg.dim, rng)
    train = ask(x, budget(cfg.n, cfg.dim, cfg.budget), cfg.noise, cfg.level, rng)
    test = ask(x, cfg.test, cfg.noise, cfg.level, rng)
    settings = Settings(cfg.p, cfg.eps, cfg.iters, cfg.path, cfg.val)
    nuclear, lore, lam_nuclear, lam_lore = fit(train, cfg.n, settings, rng)
    metrics = {"true_dim": float(cfg.dim), "triplets": float(len(train)),
               "oracle.accuracy": accuracy(gram_of(x), test),
               "lore.lam": lam_lore, "nuclear.lam": lam_nuclear}
    for name, f in (("lore", lore), ("nuclear", nuclear)):
        r = f.rank(cfg.rank_tol)
        metrics |= {f"{name}.rank": float(r), f"{name}.rank_correct": float(r == cfg.dim),
                    f"{name}.accuracy": accuracy(f.gram, test)}
    runs = {f"{m}_{size}": (m, d) for m in ("soe", "tste")
            for size, d in (("true", cfg.dim), ("large", cfg.large_dim))}
    embeddings, _ = cblearn_embeddings(train, test, cfg.n, runs, seed)
    for name, e in embeddings.items():
        metrics[f"{name}.accuracy"] = accuracy(gram_of(e), test)
        if name.endswith("_large"):
            metrics[f"{name}.rank"] = float(rank(np.linalg.eigvalsh(gram_of(e)), cfg.rank_tol))
    spectra = {"lore": lore.spectrum, "nuclear": nuclear.spectrum}
    np.savetxt(out / "spectra.csv", np.column_stack(list(spectra.values())), delimiter=",",
               header=",".join(spectra), comments="")
    _figure(spectra, metrics, cfg, out / "spectra_accuracy.png")
    return metrics


def _figure(spectra: dict[str, np.ndarray], metrics: dict[str, float], cfg: Config,
            path: Path) -> None:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    shown = max(cfg.large_dim, cfg.dim + 3)
    for name, values in spectra.items():
        axes[0].plot(np.arange(1, shown + 1), values[:shown] / values[0], "o-",
                     label=f"{name} (rank {metrics[f'{name}.rank']:.0f})")
    axes[0].axvline(cfg.dim + 0.5, color="k", ls="--", label=f"true dim {cfg.dim}")
    axes[0].axhline(cfg.rank_tol, color="grey", ls=":", label="rank threshold")
    axes[0].set(xlabel="eigenvalue index", ylabel="eigenvalue / largest",
                title="spectrum of the learned K")
    axes[0].legend()
    names = [m for m in ("lore", "nuclear") + BASELINES if f"{m}.accuracy" in metrics]
    axes[1].bar(names, [metrics[f"{m}.accuracy"] for m in names])
    axes[1].axhline(metrics["oracle.accuracy"], color="k", ls="--", label="true space")
    axes[1].set_ylim(0.5, 1.0)
    axes[1].set(ylabel="held-out triplet accuracy",
                title=f"{int(metrics['triplets'])} triplets ({cfg.budget:g} n d log n)")
    axes[1].tick_params(axis="x", labelrotation=30)
    axes[1].legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
