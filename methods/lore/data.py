"""Synthetic perceptual spaces of known dimension and a noisy oracle answering triplet queries
about them: the ground truth LORE has to recover from comparisons alone."""
from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.spatial.distance import cdist

Noise = Literal["logistic", "flip"]


def space(n: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """(n, dim) Gaussian points, centred and scaled to a mean squared distance of 1, so one
    noise level means the same thing in every dimension."""
    x = rng.standard_normal((n, dim))
    x -= x.mean(0)
    return x / math.sqrt(np.mean(distances(x)[np.triu_indices(n, 1)]))


def distances(x: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (n, n)."""
    return cdist(x, x, "sqeuclidean")


def budget(n: int, dim: int, multiple: float) -> int:
    """Triplet count as a multiple of n d log n, the order of triplets needed to pin an
    n-point, d-dimensional embedding down."""
    return max(1, round(multiple * n * dim * math.log(n)))


def ask(x: np.ndarray, count: int, noise: Noise, level: float, rng: np.random.Generator
        ) -> np.ndarray:
    """`count` random triplets answered by the oracle, as rows (i, j, k) meaning "i is closer
    to j than to k". Logistic noise answers right with probability sigmoid(gap / level), gap
    being the difference of squared distances (hard comparisons err more); flip noise answers
    every query wrong with probability `level`."""
    n = len(x)
    q = np.array([rng.choice(n, 3, replace=False) for _ in range(count)])
    d = distances(x)
    gap = d[q[:, 0], q[:, 2]] - d[q[:, 0], q[:, 1]]
    if noise == "logistic":
        right = rng.random(count) < 1 / (1 + np.exp(-gap / level))
    else:
        right = (gap > 0) ^ (rng.random(count) < level)
    return np.where(right[:, None], q, q[:, [0, 2, 1]])
