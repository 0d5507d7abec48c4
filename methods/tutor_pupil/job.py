"""One cell of the tutor_pupil job: one case, the Pupil fixed, three learners trained on the
same samples (the Tutor, a residual model, a black box), then the Tutor's corrections read
against how far each sample breaks the Pupil's assumption.

Metrics (test set; `beyond`: inputs past the training range, regression cases only):
- regression: `err_pupil`, `err_tutor`, `err_residual`, `err_blackbox` (mean |pred / true - 1|)
  and `beyond_err_*`; digits: `acc_pupil`, `acc_tutor`, `acc_residual`, `acc_blackbox`.
- `correction_low` / `correction_high`: median size of the Tutor's correction in the quarter of
  samples that break the Pupil's assumption least / most (amplitude; drag over gravity;
  template margin); `correction_rho`: Spearman correlation of size and strain.
- pendulum only: the Tutor's implied period ratio T / T_small = exp(delta / 2) fitted by
  sparse regression over even amplitude terms and length terms (amplitudes up to
  `fit_max`): `series_theta2`, `series_theta4` (exact: 1/16 = 0.0625 and 11/3072 = 0.00358),
  `series_terms` (terms kept of theta^2, theta^4, L, L theta^2; exact: 2) and the same fit of the exact ratio,
  `series_theta2_exact`, `series_theta4_exact` (the fit's own bias at this range).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field
from scipy.stats import spearmanr

from edgert.methods.threads import one_thread
from edgert.methods.tutor_pupil import figures
from edgert.methods.tutor_pupil.cases import (CASES, Pupil, digits, pendulum, pendulum_period,
                                              projectile)
from edgert.methods.tutor_pupil.models import Learner, fit
from edgert.methods.tutor_pupil.symbolic import library, stlsq

KINDS = ("tutor", "residual", "blackbox")


class Config(BaseModel):
    """`correction_weight`: the weight of the mean squared correction in the Tutor's loss."""

    case: str = Field("pendulum", pattern="|".join(CASES))
    correction_weight: float = Field(1e-3, ge=0)
    n_train: int = Field(1000, ge=50)
    steps: int = Field(3000, ge=1)
    lr: float = Field(3e-3, gt=0)
    hidden: int = Field(64, ge=4)
    fit_max: float = Field(1.6, gt=0, le=2.6)
    threshold: float = Field(0.05, ge=0)


def grid(quick: bool) -> list[dict]:
    """Each case at the default correction weight; the full grid adds a weaker and a
    stronger one and trains longer."""
    if quick:
        return [Config(case=c).model_dump() for c in CASES]
    return [Config(case=c, correction_weight=w, steps=6000).model_dump()
            for c in CASES for w in (1e-4, 1e-3, 1e-2)]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def _splits(cfg: Config, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    if cfg.case == "pendulum":
        return (pendulum(cfg.n_train, rng), pendulum(500, rng),
                pendulum(300, rng, theta_min=2.6, theta_max=2.95))
    if cfg.case == "projectile":
        return (projectile(cfg.n_train, rng), projectile(500, rng),
                projectile(300, rng, k_min=0.05, k_max=0.08))
    train, test = digits(seed)
    return train, test, None


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    torch.manual_seed(seed)
    train, test, beyond = _splits(cfg, seed)
    pupil = Pupil(cfg.case, train)
    if cfg.case == "digits":
        train.strain, test.strain = (pupil.margin(s.x, s.y) for s in (train, test))
    x, y = torch.as_tensor(train.x), torch.as_tensor(train.y)
    learners = {k: Learner(k, pupil, x, y, cfg.hidden) for k in KINDS}
    for kind, model in learners.items():
        fit(model, x, y, cfg.steps, cfg.lr, cfg.correction_weight if kind == "tutor" else 0.0)
    metrics, seen = _scores(learners, pupil, test, "")
    if beyond is not None:
        metrics |= _scores(learners, pupil, beyond, "beyond_")[0]
    size = seen["correction"]
    low, high = np.quantile(test.strain, [0.25, 0.75])
    metrics |= {"correction_low": float(np.median(size[test.strain <= low])),
                "correction_high": float(np.median(size[test.strain >= high])),
                "correction_rho": float(spearmanr(size, test.strain)[0])}
    series = None
    if cfg.case == "pendulum":
        series = _series(learners["tutor"], cfg)
        metrics |= series["metrics"]
    figures.cell(cfg.case, test, seen, series, out / "corrections.png")
    return metrics


@torch.no_grad()
def _scores(learners: dict, pupil: Pupil, split, prefix: str) -> tuple[dict, dict]:
    """Each learner's (and the Pupil's) error or accuracy on `split`; and per sample: errors
    and the Tutor's correction size."""
    x = torch.as_tensor(split.x)
    outs = {k: m(x) for k, m in learners.items()}
    seen = {"correction": outs["tutor"][1].norm(dim=1).numpy()}
    metrics = {}
    if pupil.case == "digits":
        preds = {"pupil": pupil(x)} | {k: o for k, (o, _) in outs.items()}
        for k, logits in preds.items():
            right = (logits.argmax(1).numpy() == split.y)
            metrics[f"{prefix}acc_{k}"] = float(right.mean())
            seen[k] = 1.0 - right
    else:
        preds = {"pupil": torch.log(pupil(x))} | {k: o for k, (o, _) in outs.items()}
        for k, log_pred in preds.items():
            err = np.abs(np.exp(log_pred.numpy() - np.log(split.y)) - 1)
            metrics[f"{prefix}err_{k}"] = float(err.mean())
            seen[k] = err
    return metrics, seen


@torch.no_grad()
def _series(tutor: Learner, cfg: Config) -> dict:
    """Fit the Tutor's implied period ratio, and the exact ratio, over a dense grid of
    amplitudes up to fit_max at random lengths."""
    rng = np.random.default_rng(0)
    theta = np.linspace(0.05, cfg.fit_max, 400)
    length = rng.uniform(0.2, 2.0, len(theta))
    x = torch.as_tensor(np.stack([theta, length], 1).astype(np.float32))
    _, delta = tutor(x)
    implied = np.exp(delta[:, 0].numpy() / 2)
    exact = pendulum_period(theta, length) / (2 * np.pi * np.sqrt(length / 9.81))
    features, names = library(theta, length)
    coef = stlsq(features, implied - 1, cfg.threshold)
    coef_exact = stlsq(features, exact - 1, cfg.threshold)
    at = {n: i for i, n in enumerate(names)}
    return {
        "theta": theta, "implied": implied, "exact": exact, "fitted": 1 + features @ coef,
        "terms": {n: float(c) for n, c in zip(names, coef) if c != 0},
        "metrics": {"series_theta2": float(coef[at["theta^2"]]),
                    "series_theta4": float(coef[at["theta^4"]]),
                    "series_terms": float((coef != 0).sum()),
                    "series_theta2_exact": float(coef_exact[at["theta^2"]]),
                    "series_theta4_exact": float(coef_exact[at["theta^4"]])},
    }
