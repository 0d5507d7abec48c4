"""Choosing the regularisation weight and fitting LORE and its convex baseline with it.

The weight sets the rank, so it is chosen on data, never by peeking at the true dimension:
a path of weights (fractions of the smallest weight at which the nuclear-norm solution is
K = 0) is fitted on most of the training triplets and scored by the logistic loss on the rest
(a proper score: it punishes an over-confident, over-ranked K that held-out accuracy barely
sees). Each method keeps the largest weight within one standard error of its best score (the
one-standard-error rule: the simplest model the validation data cannot tell from the best).
Then both are refitted on all training triplets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgert.methods.lore.embed import Fit, gradient, irsvt, losses_per_triplet
from edgert.methods.threads import one_thread


@dataclass
class Settings:
    p: float
    eps: float
    iters: int
    path: list[float]
    val: float


def lam_max(t: np.ndarray, n: int) -> float:
    """The top eigenvalue of -grad loss(0): any nuclear weight above it gives K = 0."""
    return float(np.linalg.eigvalsh(-gradient(np.zeros((n, n)), t))[-1])


def pair(t: np.ndarray, n: int, lam: float, s: Settings) -> tuple[Fit, Fit]:
    """The nuclear-norm fit and the LORE fit started from it: the reweighting needs a start
    whose spectrum already tells signal from noise (from K = 0 every weight is equal)."""
    nuclear = irsvt(t, n, lam, 1.0, 0.0, s.iters)
    return nuclear, irsvt(t, n, lam, s.p, s.eps, s.iters, start=nuclear.gram)


def choose(t: np.ndarray, n: int, s: Settings, rng: np.random.Generator
           ) -> tuple[float, float]:
    """The path fractions the one-standard-error rule picks, for the nuclear norm and LORE."""
    path = sorted(s.path, reverse=True)
    order = rng.permutation(len(t))
    cut = int(round(len(t) * (1 - s.val)))
    train, val = t[order[:cut]], t[order[cut:]]
    top = lam_max(train, n)
    losses = np.array([[losses_per_triplet(f.gram, val) for f in pair(train, n, frac * top, s)]
                       for frac in path])  # (path, method, triplet)
    mean = losses.mean(2)
    se = losses.std(2) / np.sqrt(losses.shape[2])
    best = mean.argmin(0)
    m = np.arange(2)
    picks = np.argmax(mean <= mean[best, m] + se[best, m], axis=0)  # first: largest weight
    return path[picks[0]], path[picks[1]]


def fit(t: np.ndarray, n: int, s: Settings, rng: np.random.Generator
        ) -> tuple[Fit, Fit, float, float]:
    """(nuclear, lore, nuclear's fraction, lore's fraction), refitted on all of `t`."""
    with one_thread():
        frac_nuclear, frac_lore = choose(t, n, s, rng)
        top = lam_max(t, n)
        nuclear = irsvt(t, n, frac_nuclear * top, 1.0, 0.0, s.iters)
        lore = pair(t, n, frac_lore * top, s)[1]
    return nuclear, lore, frac_nuclear, frac_lore
