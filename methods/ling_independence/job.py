"""One cell of the ling_independence job: one noise family, every sample size of the grid.

Metrics (a test's rejection rate at level `alpha`; headline names average over the ns, and
`.n<N>` names give each n):
- `power.<test>` on Y = b X + e with b = `effect`; `type1.<test>` with b = 0. Tests: `ling`
  (the LiNG test), `ling_mean` (its conditional-mean parts only: an ablation), `hsic` (hyppo),
  `kci` (causal-learn).
- `shd.<test>` / `shd_skeleton.<test>`: PC on random linear non-Gaussian DAGs with the `ling`,
  `kci` or `fisherz` test; structural Hamming distance of its CPDAG (skeleton) to the truth.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field

from edgert.methods.ling_independence.baselines import hsic_pvalue, kci_pvalue
from edgert.methods.ling_independence.data import NOISES, Noise, pair, random_dag, sample_sem
from edgert.methods.ling_independence.discovery import pc_graph, shd, skeleton_shd, true_cpdag
from edgert.methods.ling_independence.ling import MEAN_PARTS, combined_pvalue, parts, permutations
from edgert.methods.plots import pyplot
from edgert.methods.threads import one_thread

TESTS = ("ling", "ling_mean", "hsic", "kci")
PC_TESTS = ("ling", "kci", "fisherz")


class Config(BaseModel):
    noise: Noise = "laplace"
    df: float = Field(3.0, gt=2)  # Student-t degrees of freedom
    effect: float = Field(0.3, gt=0)  # b under the alternative
    ns: list[Annotated[int, Field(ge=10)]] = [25, 50, 100, 200]
    reps: int = Field(200, ge=1)  # data sets per n and hypothesis
    permutations: int = Field(200, ge=19)
    alpha: float = Field(0.05, gt=0, lt=1)
    dags: int = Field(10, ge=0)  # 0: no downstream PC
    dag_nodes: int = Field(6, ge=2)
    edge_prob: float = Field(0.4, ge=0, le=1)
    dag_n: int = Field(200, ge=20)


def grid(quick: bool) -> list[dict]:
    base = (Config(reps=20, permutations=100, dags=2) if quick else
            Config(ns=[25, 50, 100, 200, 400]))
    return [base.model_copy(update={"noise": noise}).model_dump() for noise in NOISES]


def _pvalues(x: np.ndarray, y: np.ndarray, cfg: Config, rng: np.random.Generator
             ) -> dict[str, float]:
    stats = parts(x, y, permutations(len(x), cfg.permutations, rng))
    return {"ling": combined_pvalue(stats), "ling_mean": combined_pvalue(stats, MEAN_PARTS),
            "hsic": hsic_pvalue(x, y, cfg.permutations), "kci": kci_pvalue(x, y)}


def rejection_rates(cfg: Config, rng: np.random.Generator) -> list[dict]:
    """Rows {n, hypothesis, test, rate}: the share of `reps` data sets each test rejects."""
    rows = []
    for n in cfg.ns:
        for hypothesis, b in (("type1", 0.0), ("power", cfg.effect)):
            p = [_pvalues(*pair(cfg.noise, n, b, rng, cfg.df), cfg, rng) for _ in range(cfg.reps)]
            rows += [{"n": n, "hypothesis": hypothesis, "test": t,
                      "rate": float(np.mean([r[t] <= cfg.alpha for r in p]))} for t in TESTS]
    return rows


def discovery_scores(cfg: Config, rng: np.random.Generator) -> list[dict]:
    """Rows {dag, test, shd, shd_skeleton}: PC with each test on `dags` random SEMs."""
    rows = []
    for d in range(cfg.dags):
        w = random_dag(cfg.dag_nodes, cfg.edge_prob, rng)
        data, truth = sample_sem(w, cfg.dag_n, cfg.noise, rng, cfg.df), true_cpdag(w)
        options = {"ling": {"permutations": cfg.permutations, "seed": int(rng.integers(2**31))}}
        for test in PC_TESTS:
            est = pc_graph(data, test, cfg.alpha, **options.get(test, {}))
            rows.append({"dag": d, "test": test, "shd": shd(truth, est),
                         "shd_skeleton": skeleton_shd(truth, est)})
    return rows


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    rng = np.random.default_rng(seed)
    np.random.seed(seed)  # hyppo's permutations come from numpy's global generator
    with one_thread():
        rates = rejection_rates(cfg, rng)
        scores = discovery_scores(cfg, rng)
    _table(rates, out / "rejection_rates.csv")
    metrics = {f"{r['hypothesis']}.{r['test']}.n{r['n']}": r["rate"] for r in rates}
    for hypothesis in ("power", "type1"):
        for t in TESTS:
            metrics[f"{hypothesis}.{t}"] = float(np.mean(
                [r["rate"] for r in rates if (r["hypothesis"], r["test"]) == (hypothesis, t)]))
    if scores:
        _table(scores, out / "shd.csv")
        for t in PC_TESTS:
            for m in ("shd", "shd_skeleton"):
                metrics[f"{m}.{t}"] = float(np.mean([r[m] for r in scores if r["test"] == t]))
    _figure(rates, cfg, out / "power_type1.png")
    return metrics


def _table(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _figure(rates: list[dict], cfg: Config, path: Path) -> None:
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, hypothesis in zip(axes, ("power", "type1")):
        for t in TESTS:
            rows = [r for r in rates if (r["hypothesis"], r["test"]) == (hypothesis, t)]
            ax.plot([r["n"] for r in rows], [r["rate"] for r in rows], marker="o", label=t,
                    ls="--" if t == "ling_mean" else "-")
        ax.axhline(cfg.alpha, color="k", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_xticks(cfg.ns, labels=[str(n) for n in cfg.ns])
        ax.minorticks_off()
        ax.set_xlabel("n")
        ax.set_ylim(0, 1 if hypothesis == "power" else max(0.2, 2 * cfg.alpha))
    axes[0].set_title(f"power, b = {cfg.effect} ({cfg.noise})")
    axes[1].set_title(f"type-I error ({cfg.noise})")
    axes[0].set_ylabel("rejection rate")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
