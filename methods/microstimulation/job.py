"""One cell of the microstimulation job: train two topographic networks on digits (model A,
and model B that stands in for the animal), find A's category patches, map A's sites onto B
by selectivity, stimulate both and compare the choice shifts.

Metrics:
- `accuracy` / `accuracy_animal`: the linear observer's test accuracy on A's / B's sheet.
- `patch_smoothness` / `patch_smoothness_shuffled` / `patch_smoothness_animal`: mean
  correlation of neighbouring units' selectivity profiles in A, in A with positions
  shuffled, and in B.
- `bias_patch`: mean shift of B's sampled choices toward a patch's digit when stimulating
  the site mapped from that patch's centre in A.
- `bias_random`: the same at sites mapped from random sites of A, toward a digit drawn at
  random (the control experiment: the task's digit is not chosen for the site). In an n-way
  choice the shifts of a site sum to zero, so its expectation is 0; it tests the sampling.
- `bias_random_preferred`: at those random sites, toward the digit A's map prefers there: the
  harder control, since in a tiled map every site lies in some digit's territory.
- `bias_patch_model` / `bias_random_preferred_model`: the same shifts predicted in A.
- `predicted_observed_r`: Pearson r over sites (patch and random) between A's and B's shift
  toward the site's digit (patch digit, or preferred digit); `predicted_observed_r_all`: over
  every (site, digit) shift.
- `site_match_corr`: mean correlation of the selectivity profiles of matched sites.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from scipy.stats import pearsonr

from edgert.methods.microstimulation import figures
from edgert.methods.microstimulation.data import CLASSES, digits
from edgert.methods.microstimulation.stimulate import choices, readout, shift, stimulate
from edgert.methods.microstimulation.topography import (
    match_sites,
    neighbour_pairs,
    patch_centres,
    selectivity,
    shuffled_smoothness,
    smoothed,
    smoothness,
)
from edgert.methods.microstimulation.train import fit, sheet_activity
from edgert.methods.threads import one_thread


class Config(BaseModel):
    """Sheet of side x side units; `current` in units of the sheet's response spread;
    `sigma0` (spread at current 1) and `electrode_sigma` (recording footprint) in unit
    spacings; `trials`: sampled choices per test image and condition in the animal."""

    side: int = Field(16, ge=4)
    width: int = Field(16, ge=2)
    epochs: int = Field(12, ge=1)
    spatial_weight: float = Field(1.0, ge=0)
    current: float = Field(6.0, gt=0)
    sigma0: float = Field(1.0, gt=0)
    electrode_sigma: float = Field(1.0, gt=0)
    random_sites: int = Field(20, ge=2)
    trials: int = Field(5, ge=1)


def grid(quick: bool) -> list[dict]:
    """The model, and the same without the spatial loss (no topography: the ablation); the
    full grid adds a weaker and a stronger current."""
    base = Config() if quick else Config(epochs=20)
    ablation = [base.model_copy(update={"spatial_weight": 0.0})]
    currents = [] if quick else [base.model_copy(update={"current": c}) for c in (3.0, 12.0)]
    return [c.model_dump() for c in [base, *ablation, *currents]]


class Sheet:
    """One trained network as an experimenter sees it: responses, category map, observer."""

    def __init__(self, cfg: Config, seed: int, data: tuple):
        x_tr, y_tr, x_te, y_te = data
        model = fit(x_tr, y_tr, seed, cfg.side, cfg.width, cfg.epochs, cfg.spatial_weight)
        self.positions = model.positions.numpy()
        localiser = sheet_activity(model, x_tr)
        self.test = sheet_activity(model, x_te)
        self.observer = readout(localiser, y_tr.numpy(), seed)
        self.accuracy = float(self.observer.score(self.test, y_te.numpy()))
        self.profiles = selectivity(localiser, y_tr.numpy(), CLASSES)
        self.local = smoothed(self.profiles, cfg.side, cfg.electrode_sigma)
        self.scale = float(self.test.std(0).mean())

    def stimulated(self, site: int, cfg: Config) -> np.ndarray:
        return stimulate(self.test, self.positions, site, cfg.current, cfg.sigma0, self.scale)


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    data = digits(seed)
    a, b = Sheet(cfg, 2 * seed, data), Sheet(cfg, 2 * seed + 1, data)
    pairs = neighbour_pairs(a.positions)

    patches = patch_centres(a.local)
    randoms = rng.choice(len(a.positions), cfg.random_sites, replace=False)
    sites = np.concatenate([patches, randoms])
    targets = np.concatenate([np.arange(CLASSES), a.local[randoms].argmax(1)])
    task = rng.integers(0, CLASSES, cfg.random_sites)
    is_patch = np.arange(len(sites)) < len(patches)
    mapped, match_r = match_sites(a.local, sites, b.local)

    predicted = np.stack([shift(a.observer, a.test, a.stimulated(s, cfg)) for s in sites])
    baseline = choices(b.observer, b.test, rng, cfg.trials)
    observed = np.stack([choices(b.observer, b.stimulated(s, cfg), rng, cfg.trials) - baseline
                         for s in mapped])
    at = np.arange(len(sites))
    pred_t, obs_t = predicted[at, targets], observed[at, targets]
    r = float(pearsonr(pred_t, obs_t)[0])

    _table(out / "sites.csv", sites, mapped, targets, is_patch, match_r, pred_t, obs_t)
    figures.selectivity_maps([a.profiles, b.profiles], [sites, mapped], targets, cfg.side,
                             ["model A: sites chosen at patch centres",
                              "model B (animal): mapped sites"], out / "selectivity_maps.png")
    figures.predicted_vs_observed(pred_t, obs_t, is_patch, r, out / "predicted_vs_observed.png")
    return {
        "accuracy": a.accuracy,
        "accuracy_animal": b.accuracy,
        "patch_smoothness": smoothness(a.profiles, pairs),
        "patch_smoothness_shuffled": shuffled_smoothness(a.profiles, pairs, rng),
        "patch_smoothness_animal": smoothness(b.profiles, pairs),
        "bias_patch": float(obs_t[is_patch].mean()),
        "bias_random": float(observed[~is_patch][np.arange(cfg.random_sites), task].mean()),
        "bias_random_preferred": float(obs_t[~is_patch].mean()),
        "bias_patch_model": float(pred_t[is_patch].mean()),
        "bias_random_preferred_model": float(pred_t[~is_patch].mean()),
        "predicted_observed_r": r,
        "predicted_observed_r_all": float(pearsonr(predicted.ravel(), observed.ravel())[0]),
        "site_match_corr": float(match_r.mean()),
    }


def _table(path: Path, sites, mapped, targets, is_patch, match_r, pred_t, obs_t) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "target_digit", "site_a", "site_b", "match_corr",
                    "predicted_shift", "observed_shift"])
        for row in zip(np.where(is_patch, "patch", "random"), targets, sites, mapped, match_r,
                       pred_t, obs_t):
            w.writerow([row[0], int(row[1]), int(row[2]), int(row[3]),
                        *(f"{v:.4f}" for v in row[4:])])
