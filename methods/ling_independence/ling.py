"""The LiNG independence test: when any dependence between X and Y is linear with non-Gaussian
noise, X and Y are dependent exactly when a conditional moment moves. Y = b X + e shifts the
conditional mean E[Y|X]; the reverse regression X on Y moves the conditional mean and, with
non-Gaussian terms, in general the conditional variance too (the LiNGAM asymmetry). So the test looks only at those moments, in both directions,
instead of at every possible dependence as HSIC does, and spends its power where it is.

Each part is an HSIC-type kernel statistic r' K r between a Gaussian kernel K on the regressor
and a residual r of the null model (the constant fit: the centred response, or its centred
square for the variance). Residuals of the null model, unlike those of a fitted slope, need no
refit under a permutation, and the permutation null is exact at any n. The four parts are
standardised over the permutations (non-parametric combination) and summed into one statistic.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import numpy as np
from causallearn.utils.cit import CIT_Base
from scipy.spatial.distance import pdist, squareform

PARTS = ("mean_y|x", "variance_y|x", "mean_x|y", "variance_x|y")
MEAN_PARTS = ("mean_y|x", "mean_x|y")  # the ablation without the variance parts


def gaussian_gram(v: np.ndarray) -> np.ndarray:
    """Gaussian kernel matrix, bandwidth from the median heuristic."""
    d = squareform(pdist(v[:, None], "sqeuclidean"))
    positive = d[d > 0]
    return np.exp(-d / (np.median(positive) if positive.size else 1.0))


def standardize(v: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance: the kernels and residuals see no scale."""
    return (v - v.mean()) / (v.std() or 1.0)


def permutations(n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """(count + 1, n) index rows; row 0 is the identity (the observed data)."""
    rows = rng.permuted(np.tile(np.arange(n), (count + 1, 1)), axis=1)
    rows[0] = np.arange(n)
    return rows


def parts(x: np.ndarray, y: np.ndarray, perms: np.ndarray) -> dict[str, np.ndarray]:
    """Each part's statistic on the data with y permuted by each row of `perms`. Permuting y
    under a fixed X-on-Y kernel is permuting x by the inverse permutation."""
    x, y = standardize(x), standardize(y)
    kx, ky = gaussian_gram(x), gaussian_gram(y)
    ry, rx = y[perms], x[np.argsort(perms, axis=1)]
    return {"mean_y|x": _quad(kx, ry), "variance_y|x": _quad(kx, _centred_square(ry)),
            "mean_x|y": _quad(ky, rx), "variance_x|y": _quad(ky, _centred_square(rx))}


def _quad(k: np.ndarray, r: np.ndarray) -> np.ndarray:
    """r' K r for every row r."""
    return ((r @ k) * r).sum(1)


def _centred_square(r: np.ndarray) -> np.ndarray:
    return r ** 2 - (r ** 2).mean(1, keepdims=True)


def combined_pvalue(stats: dict[str, np.ndarray], names: Sequence[str] = PARTS) -> float:
    """Permutation p-value of the sum of the named parts, each standardised over all rows
    (observed included, so the rows stay exchangeable and the test exact)."""
    total = sum((s - s.mean()) / (s.std() or 1.0) for s in (stats[k] for k in names))
    return float(np.mean(total >= total[0]))


def ling_test(x: np.ndarray, y: np.ndarray, count: int, rng: np.random.Generator) -> float:
    """p-value of X independent of Y from `count` permutations."""
    return combined_pvalue(parts(x, y, permutations(len(x), count, rng)))


def residualize(v: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Residual of v after least squares on [1, z]: in a linear SEM, X indep. Y | Z becomes a
    question about the two residuals."""
    design = np.column_stack([np.ones(len(v)), z])
    return v - design @ np.linalg.lstsq(design, v, rcond=None)[0]


class LingCIT(CIT_Base):
    """The LiNG test as a causal-learn conditional independence test (`indep_test="ling"`):
    residualise X and Y linearly on the conditioning set, then test the residuals."""

    def __init__(self, data: np.ndarray, permutations: int = 200, seed: int = 0, **kwargs):
        super().__init__(data, **kwargs)
        params = json.dumps({"permutations": permutations, "seed": seed})
        self.check_cache_method_consistent("ling", hashlib.md5(params.encode()).hexdigest())
        self.assert_input_data_is_valid()
        self.count, self.rng = permutations, np.random.default_rng(seed)

    def __call__(self, X, Y, condition_set=None) -> float:
        xs, ys, cond, key = self.get_formatted_XYZ_and_cachekey(X, Y, condition_set)
        if key not in self.pvalue_cache:
            x, y = self.data[:, xs[0]], self.data[:, ys[0]]
            if cond:
                x, y = residualize(x, self.data[:, cond]), residualize(y, self.data[:, cond])
            self.pvalue_cache[key] = ling_test(x, y, self.count, self.rng)
        return self.pvalue_cache[key]
