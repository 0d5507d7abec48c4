"""Source variables (sources x stimuli) for the three experiments.

The code's optimum depends on the support of the sources, not on their correlation as such,
so correlation is made in two ways: by a linear mixture of independent box sources (the
parallelogram loses the square's corners: "range lost") and by piling stimuli onto the
diagonal of the square while its corners stay (correlated, "range kept").
"""
from __future__ import annotations

import numpy as np


def box(sources: int, stimuli: int, rng: np.random.Generator) -> np.ndarray:
    """Independent sources, uniform on [0, 1]: a square support with all its corners."""
    return rng.uniform(0.0, 1.0, (sources, stimuli))


def tuning_directions(angle_deg: float) -> np.ndarray:
    """Two unit source directions `angle_deg` apart (columns): the mixing matrix A."""
    a = np.deg2rad(angle_deg)
    return np.array([[1.0, np.cos(a)], [0.0, np.sin(a)]])


def range_lost(u: np.ndarray, rho: float) -> np.ndarray:
    """A symmetric linear mixture of two independent equal-variance sources that has
    correlation `rho`: the support becomes a parallelogram."""
    phi = np.arcsin(rho) / 2
    return np.array([[np.cos(phi), np.sin(phi)], [np.sin(phi), np.cos(phi)]]) @ u


def range_kept(u: np.ndarray, rho: float, rng: np.random.Generator,
               jitter: float = 0.05) -> np.ndarray:
    """Move a share `rho` of the stimuli onto the diagonal (x2 = x1 + jitter): correlation
    about `rho`, while the rest still fill the square up to its corners."""
    x = u.copy()
    moved = rng.random(x.shape[1]) < rho
    x[1, moved] = np.clip(x[0, moved] + jitter * rng.standard_normal(moved.sum()), 0.0, 1.0)
    return x
