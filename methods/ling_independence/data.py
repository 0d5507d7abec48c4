"""Linear non-Gaussian data: pairs Y = b X + e, and random linear SEMs over DAGs.

Every variable draws from one noise family (uniform, Laplace, exponential, Student-t), shifted
and scaled to mean 0 and variance 1 so that the edge weight `b` means the same for all four.
"""
from __future__ import annotations

from functools import cache
from typing import Literal

import numpy as np
from scipy import stats
from scipy.stats.distributions import rv_frozen

Noise = Literal["uniform", "laplace", "exponential", "student_t"]
NOISES: tuple[Noise, ...] = ("uniform", "laplace", "exponential", "student_t")


@cache
def distribution(noise: Noise, df: float = 3.0) -> rv_frozen:
    """The frozen scipy distribution (cached: freezing one costs milliseconds)."""
    return stats.t(df) if noise == "student_t" else {
        "uniform": stats.uniform, "laplace": stats.laplace, "exponential": stats.expon}[noise]()


def standardized(noise: Noise, size: int | tuple[int, ...], rng: np.random.Generator,
                 df: float = 3.0) -> np.ndarray:
    """Draws with mean 0 and variance 1 (Student-t needs df > 2 for a variance)."""
    dist = distribution(noise, df)
    return (dist.rvs(size=size, random_state=rng) - dist.mean()) / dist.std()


def pair(noise: Noise, n: int, b: float, rng: np.random.Generator, df: float = 3.0
         ) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) with y = b x + e; x and e both non-Gaussian, independent; b = 0 is the null."""
    x = standardized(noise, n, rng, df)
    return x, b * x + standardized(noise, n, rng, df)


def random_dag(nodes: int, edge_prob: float, rng: np.random.Generator,
               weight: tuple[float, float] = (0.5, 1.0)) -> np.ndarray:
    """Weights W (W[i, j] != 0: edge i -> j) of an Erdos-Renyi DAG over a random causal order,
    each weight of random sign and magnitude in `weight`."""
    upper = np.triu(rng.random((nodes, nodes)) < edge_prob, k=1)
    w = upper * rng.uniform(*weight, (nodes, nodes)) * rng.choice([-1.0, 1.0], (nodes, nodes))
    order = rng.permutation(nodes)
    return w[np.ix_(order, order)]


def sample_sem(w: np.ndarray, n: int, noise: Noise, rng: np.random.Generator,
               df: float = 3.0) -> np.ndarray:
    """(n, nodes) samples of the linear SEM x = x W + e, i.e. x = e (I - W)^-1."""
    e = standardized(noise, (n, len(w)), rng, df)
    return np.linalg.solve((np.eye(len(w)) - w).T, e.T).T
