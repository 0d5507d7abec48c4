"""Microstimulation of the sheet and the behaviour it changes.

- Perturbation: a current I at a site adds I * scale * exp(-d^2 / (2 sigma(I)^2)) to every
  unit at cortical distance d; sigma(I) = sigma0 * sqrt(I), since the radius of tissue a
  current excites grows with its square root (Stoney et al. 1968). `scale` is the sheet's
  typical response spread, so one unit of current means the same drive in any network.
- Behaviour: a linear classifier on the sheet, fitted on unstimulated responses, makes an
  n-way choice; stimulation shifts the choice probabilities, measured exactly in the model
  and from sampled choices (finite trials) in the stand-in animal.
"""
from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression


def readout(a: np.ndarray, y: np.ndarray, seed: int) -> LogisticRegression:
    """The trained observer: a linear n-way classifier of sheet activity."""
    return LogisticRegression(max_iter=2000, random_state=seed).fit(a, y)


def spread(current: float, sigma0: float) -> float:
    """sigma(I): the width of the activated tissue."""
    return sigma0 * float(np.sqrt(current))


def stimulate(a: np.ndarray, positions: np.ndarray, site: int, current: float,
              sigma0: float, scale: float) -> np.ndarray:
    """Sheet activity with the current's extra activation added around `site`."""
    d2 = ((positions - positions[site]) ** 2).sum(1)
    return a + current * scale * np.exp(-d2 / (2 * spread(current, sigma0) ** 2))


def shift(observer: LogisticRegression, a: np.ndarray, stimulated: np.ndarray) -> np.ndarray:
    """(classes,) change in mean choice probability caused by stimulation (the model's
    prediction)."""
    return observer.predict_proba(stimulated).mean(0) - observer.predict_proba(a).mean(0)


def choices(observer: LogisticRegression, a: np.ndarray, rng: np.random.Generator,
            trials: int) -> np.ndarray:
    """(classes,) choice frequencies over `trials` sampled choices per image (behaviour)."""
    p = np.repeat(observer.predict_proba(a), trials, axis=0)
    picks = (p.cumsum(1) < rng.random((len(p), 1))).sum(1)
    return np.bincount(np.minimum(picks, p.shape[1] - 1), minlength=p.shape[1]) / len(p)
