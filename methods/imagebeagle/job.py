"""One cell of the imagebeagle job: embed the photo patches, make model neurons (baseline,
two-tailed) and ReLU network units (one-tailed), then measure what the paper shows.

Metrics:
- `below_baseline_neurons` / `below_baseline_relu`: the share of stimuli that drive a unit
  clearly below its baseline (suppression); two-tailed units have a bottom tail to find.
- `tuning_corr_top_bottom` / `tuning_corr_top_only`: how well a unit's tuning is recovered from
  its `few` top AND bottom stimuli, against its top stimuli only (correlation with the truth).
- `queries_top_{greedy,beam,random}`, `queries_bottom_{greedy,beam,random}`: stimuli shown
  until one in the unit's top (bottom) 1 % is found.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from edgert.methods.imagebeagle.data import patches
from edgert.methods.imagebeagle.model import Units, embed, make_units
from edgert.methods.imagebeagle.search import Counter, beam, knn_graph, random_search


class Config(BaseModel):
    patch: int = Field(16, ge=4)
    per_photo: int = Field(400, ge=10)
    dims: int = Field(8, ge=2)
    k: int = Field(10, ge=2)
    units: int = Field(20, ge=1)
    baseline: float = Field(2.0, gt=0)
    noise: float = Field(0.3, ge=0)
    few: int = Field(10, ge=1)
    width: int = Field(4, ge=2)
    budget: int = Field(2000, ge=10)


def grid(quick: bool) -> list[dict]:
    base = Config(per_photo=150, units=8, budget=600) if quick else Config()
    return [base.model_dump(), base.model_copy(update={"noise": 1.0}).model_dump()]


def _tuning_corr(e: np.ndarray, r: np.ndarray, true: np.ndarray, few: int, bottom: bool
                 ) -> float:
    order = np.argsort(r)
    estimate = e[order[-few:]].mean(0) - (e[order[:few]].mean(0) if bottom else e.mean(0))
    return float(np.dot(estimate, true) / (np.linalg.norm(estimate) + 1e-12))


def _searches(units: Units, e: np.ndarray, graph: np.ndarray, cfg: Config,
              rng: np.random.Generator) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    rates = units.rates(e)
    for u in range(len(units.tuning)):
        respond = lambda i, u=u: float(units.respond(e[i:i + 1], rng)[0, u])  # noqa: E731
        order = np.argsort(rates[:, u])
        cut = max(len(e) // 100, 1)
        for end, goal, sign in (("top", set(order[-cut:]), 1.0),
                                ("bottom", set(order[:cut]), -1.0)):
            for name, run in (("greedy", lambda q: beam(graph, q, goal, 1, rng, cfg.budget)),
                              ("beam", lambda q: beam(graph, q, goal, cfg.width, rng,
                                                      cfg.budget)),
                              ("random", lambda q: random_search(len(e), q, goal, rng,
                                                                 cfg.budget))):
                out.setdefault(f"queries_{end}_{name}", []).append(run(Counter(respond, sign)))
    return out


def run(config: dict, seed: int, out: Path) -> dict:
    cfg = Config(**config)
    rng = np.random.default_rng(seed)
    e = embed(patches(cfg.patch, cfg.per_photo, seed=0), cfg.dims)
    graph = knn_graph(e, cfg.k)
    neurons = make_units(cfg.units, cfg.dims, rng, cfg.baseline, noise=cfg.noise)
    relu = make_units(cfg.units, cfg.dims, rng, 0.0, noise=cfg.noise)
    r_neurons, r_relu = neurons.respond(e, rng), relu.respond(e, rng)
    below = lambda r, b: float(np.mean(r < 0.5 * b)) if b > 0 else 0.0  # noqa: E731
    metrics = {
        "stimuli": float(len(e)),
        "below_baseline_neurons": below(r_neurons, cfg.baseline),
        "below_baseline_relu": below(r_relu, 0.0),
        "tuning_corr_top_bottom": float(np.mean([_tuning_corr(e, r_neurons[:, u],
                                                              neurons.tuning[u], cfg.few, True)
                                                 for u in range(cfg.units)])),
        "tuning_corr_top_only": float(np.mean([_tuning_corr(e, r_neurons[:, u],
                                                            neurons.tuning[u], cfg.few, False)
                                               for u in range(cfg.units)])),
    }
    metrics |= {k: float(np.mean(v)) for k, v in _searches(neurons, e, graph, cfg, rng).items()}
    _figure(r_neurons, r_relu, cfg.baseline, out / "responses.png")
    return metrics


def _figure(r_neurons: np.ndarray, r_relu: np.ndarray, baseline: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7, 2.8))
    axes[0].hist(r_neurons[:, 0], bins=60)
    axes[0].axvline(baseline, color="k", ls="--")
    axes[0].set_title("model neuron (baseline): two-tailed")
    axes[1].hist(r_relu[:, 0], bins=60)
    axes[1].set_title("ReLU unit: one-tailed")
    for ax in axes:
        ax.set_xlabel("response")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
