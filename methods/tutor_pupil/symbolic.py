"""Reading a correction back as a formula: sparse regression over a library of candidate
terms (sequentially thresholded least squares, the SINDy fit)."""
from __future__ import annotations

import numpy as np


def stlsq(features: np.ndarray, target: np.ndarray, threshold: float,
          rounds: int = 10) -> np.ndarray:
    """Coefficients (terms,) of target ~ features @ coef, terms whose scaled coefficient
    (coef times the term's spread, over the target's spread) falls under `threshold` dropped
    and the rest refitted."""
    scale = features.std(0) + 1e-12
    z = features / scale
    keep = np.ones(features.shape[1], bool)
    coef = np.zeros(features.shape[1])
    for _ in range(rounds):
        coef[:] = 0
        coef[keep] = np.linalg.lstsq(z[:, keep], target, rcond=None)[0]
        small = np.abs(coef) < threshold * (target.std() + 1e-12)
        if not (small & keep).any():
            break
        keep &= ~small
    return coef / scale


def library(theta: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Candidate terms for a pendulum's period ratio: even powers of the amplitude (the
    period cannot depend on the swing's direction), and the length alone and with theta^2
    (which the fit should drop: the ratio does not depend on length)."""
    terms = {"theta^2": theta ** 2, "theta^4": theta ** 4, "L": length,
             "L theta^2": length * theta ** 2}
    return np.stack(list(terms.values()), 1), list(terms)
