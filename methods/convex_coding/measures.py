"""What the recovered activities say: modularity (one source per unit) and identifiability
(recovering ground-truth tunings up to permutation)."""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from edgert.methods.convex_coding.problem import centred


def modularity(z: np.ndarray, x: np.ndarray) -> float:
    """1 when every unit's tuning is an affine function of a single source, 0 when it weighs
    all sources equally: per unit (d max_j a_j^2 / sum_j a_j^2 - 1) / (d - 1) of its affine
    regression on the (standardised) sources, averaged with the units' tuning variance as
    weights so that silent units do not count."""
    d = x.shape[0]
    xc, zc = centred(x), centred(z)
    a = np.linalg.lstsq(xc.T, zc.T, rcond=None)[0].T * xc.std(1)
    share = (a ** 2).max(1) / np.maximum((a ** 2).sum(1), 1e-12)
    weight = (zc ** 2).sum(1)
    return float(np.sum(weight * (d * share - 1) / (d - 1)) / max(weight.sum(), 1e-12))


def matched_correlation(z: np.ndarray, truth: np.ndarray) -> float:
    """Mean |correlation| of each true tuning with the recovered unit matched to it (a
    one-to-one assignment): 1 = recovered up to permutation, scale and offset."""
    zc, tc = centred(z), centred(truth)
    zc = zc / np.maximum(np.linalg.norm(zc, axis=1, keepdims=True), 1e-12)
    tc = tc / np.maximum(np.linalg.norm(tc, axis=1, keepdims=True), 1e-12)
    corr = np.abs(tc @ zc.T)
    rows, cols = linear_sum_assignment(-corr)
    return float(corr[rows, cols].sum() / len(truth))
