"""One cell of the convex_coding job: solve the normative coding problem in Q with cvxpy,
compare with gradient descent on activities, then sweep source geometry.

Metrics:
- `objective.{linear,nonneg}_convex`, `..._gd_best`, `..._gd_mean`: the objective at the
  convex optimum and after gradient descent on (Z, W, b) from `starts` random starts (same
  objective, evaluated at Q = Z^T Z with the optimal readout); `objective.nonneg_recovered` at
  the activities factorised out of the convex Q (the relaxation's bound is attained if equal),
  `objective.nonneg_polished` after the same descent started from those activities.
- `q_spread.{linear,nonneg}`: max |Q_clarabel - Q_scs| / max |Q|: one Q whichever solver;
  `q_distance_gd.{linear,nonneg}`: mean relative distance of the descents' Z^T Z to that Q.
- `linear_closed_form_error`: relative distance of the solvers' linear Q to the closed form.
- `rank.{linear,nonneg}`, `tightness.{linear,nonneg}`: rank of Q, relative error of Z^T Z
  against Q for the activities recovered from it (eigendecomposition; symmetric NMF);
  `tightness.affine`: the same for the sweeps' affine codes, mean over the sweeps.
- `identifiability.deg<A>`: matched |correlation| of recovered and true tunings when the two
  sources' directions are A degrees apart (X = A S, S >= 0 the tunings).
- `modularity.range_{lost,kept}.rho<R>`: modularity of the optimal non-negative affine code
  for sources with correlation R, made with (lost) or without (kept) losing the corners.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field

from edgert.methods.convex_coding.data import box, range_kept, range_lost, tuning_directions
from edgert.methods.convex_coding.descent import descend
from edgert.methods.convex_coding.factor import (eig_factor, fewest_units, numerical_rank, symnmf,
                                          tightness)
from edgert.methods.convex_coding.measures import matched_correlation, modularity
from edgert.methods.convex_coding.plot import figure
from edgert.methods.convex_coding.problem import (SOLVERS, linear_closed_form, objective,
                                           solve_affine, solve_free)
from edgert.methods.threads import one_thread


class Config(BaseModel):
    sources: int = Field(2, ge=1)
    stimuli: int = Field(30, ge=4)
    sweep_stimuli: int = Field(150, ge=8)
    gamma: float = Field(0.1, gt=0)
    energy: float = Field(0.1, gt=0)
    units: int = Field(8, ge=1)
    starts: int = Field(5, ge=1)
    steps: int = Field(8000, ge=1)
    lr: float = Field(0.02, gt=0)
    angles: list[Annotated[float, Field(gt=0, le=90)]] = [90.0, 30.0, 10.0, 3.0, 1.0]
    correlations: list[Annotated[float, Field(ge=0, lt=1)]] = [0.0, 0.5, 0.8, 0.9]


def grid(quick: bool) -> list[dict]:
    if quick:
        base = Config(stimuli=24, starts=4, steps=5000, lr=0.03)
        return [base.model_dump(), base.model_copy(update={"energy": 1.0}).model_dump()]
    base = Config(stimuli=40, sweep_stimuli=300, starts=8, steps=20000, lr=0.01,
                  angles=[90.0, 60.0, 30.0, 20.0, 10.0, 5.0, 3.0, 2.0, 1.0],
                  correlations=[0.0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.95])
    return [base.model_copy(update={"energy": e}).model_dump() for e in (0.03, 0.1, 0.3, 1.0)]


def _convex_vs_descent(cfg: Config, rng: np.random.Generator, seed: int
                       ) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Both codes on one source sample: the solvers' Q against gradient descent from several
    starts, then the activities recovered from Q."""
    x = box(cfg.sources, cfg.stimuli, rng)
    f = lambda q: objective(q, x, cfg.gamma, cfg.energy)  # noqa: E731
    metrics: dict[str, float] = {}
    runs: dict[str, list[float]] = {}
    for name, nonneg in (("linear", False), ("nonneg", True)):
        qs = [solve_free(x, cfg.gamma, cfg.energy, nonneg, s) for s in SOLVERS]
        descents = [descend(x, cfg.gamma, cfg.energy, cfg.units, nonneg, 1000 * seed + i,
                            cfg.steps, cfg.lr) for i in range(cfg.starts)]
        runs[name], runs[f"{name}_convex"] = [f(z.T @ z) for z in descents], [f(qs[0])]
        metrics |= {f"objective.{name}_convex": f(qs[0]),
                    f"objective.{name}_gd_best": min(runs[name]),
                    f"objective.{name}_gd_mean": float(np.mean(runs[name])),
                    f"q_spread.{name}": float(np.abs(qs[0] - qs[1]).max() / np.abs(qs[0]).max()),
                    f"q_distance_gd.{name}": float(np.mean([tightness(z, qs[0])
                                                            for z in descents]))}
        metrics |= (_recover_nonneg(x, qs[0], cfg, rng, seed) if nonneg else
                    _recover_linear(x, qs, cfg))
    return metrics, runs


def _recover_linear(x: np.ndarray, qs: list[np.ndarray], cfg: Config) -> dict[str, float]:
    """The solvers against the closed form, and activities by eigendecomposition."""
    exact = linear_closed_form(x, cfg.gamma, cfg.energy)
    z = eig_factor(qs[0])
    return {"linear_closed_form_error": max(float(np.linalg.norm(q - exact)
                                                  / np.linalg.norm(exact)) for q in qs),
            "rank.linear": float(len(z)), "tightness.linear": tightness(z, qs[0])}


def _recover_nonneg(x: np.ndarray, q: np.ndarray, cfg: Config, rng: np.random.Generator,
                    seed: int) -> dict[str, float]:
    """Non-negative activities factorised out of Q, as they are and after descent from them."""
    f = lambda z: objective(z.T @ z, x, cfg.gamma, cfg.energy)  # noqa: E731
    z = symnmf(q, cfg.units, rng)
    polished = descend(x, cfg.gamma, cfg.energy, cfg.units, True, seed, cfg.steps, cfg.lr,
                       init=z)
    return {"rank.nonneg": float(numerical_rank(q)), "tightness.nonneg": tightness(z, q),
            "objective.nonneg_recovered": f(z), "objective.nonneg_polished": f(polished)}


def affine_code(x: np.ndarray, cfg: Config, rng: np.random.Generator
                ) -> tuple[np.ndarray, float]:
    """Non-negative affine code of `x`: activities recovered from the optimal Q (the fewest
    units that reproduce it) and the tightness of that recovery."""
    q = solve_affine(x, cfg.gamma, cfg.energy)
    z = fewest_units(q, rng)
    return z, tightness(z, q)


def _identifiability(cfg: Config, rng: np.random.Generator) -> tuple[list[dict], dict]:
    truth = box(2, cfg.sweep_stimuli, rng)
    rows, examples = [], {}
    for angle in cfg.angles:
        z, tight = affine_code(tuning_directions(angle) @ truth, cfg, rng)
        rows.append({"experiment": "identifiability", "setting": angle,
                     "value": matched_correlation(z, truth), "units": len(z), "tightness": tight})
        examples[angle] = z
    return rows, {"truth": truth, "wide": examples[max(cfg.angles)],
                  "narrow": examples[min(cfg.angles)]}


def _modularity(cfg: Config, rng: np.random.Generator) -> list[dict]:
    u = box(2, cfg.sweep_stimuli, rng)
    rows = []
    for rho in cfg.correlations:
        for kind, x in (("range_lost", range_lost(u, rho)),
                        ("range_kept", range_kept(u, rho, rng))):
            z, tight = affine_code(x, cfg, rng)
            rows.append({"experiment": f"modularity.{kind}", "setting": rho,
                         "correlation": float(np.corrcoef(x)[0, 1]),
                         "value": modularity(z, x), "units": len(z), "tightness": tight})
    return rows


def _label(row: dict) -> str:
    prefix = "deg" if row["experiment"] == "identifiability" else "rho"
    return f"{row['experiment']}.{prefix}{row['setting']:g}"


def run(config: dict, seed: int, out: Path) -> dict:
    cfg = Config(**config)
    rng = np.random.default_rng(seed)
    with one_thread():
        metrics, runs = _convex_vs_descent(cfg, rng, seed)
        ident_rows, examples = _identifiability(cfg, rng)
        rows = ident_rows + _modularity(cfg, rng)
    metrics |= {_label(r): r["value"] for r in rows}
    metrics["tightness.affine"] = float(np.mean([r["tightness"] for r in rows]))
    _table(rows, out / "sweeps.csv")
    figure(runs, rows, examples, out / "convex_coding.png")
    return metrics


def _table(rows: list[dict], path: Path) -> None:
    fields = ["experiment", "setting", "correlation", "value", "units", "tightness"]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
