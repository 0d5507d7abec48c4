"""Dirichlet feature projection: the per-step class distributions of a trial -> one alpha.

alpha's direction is the class evidence and its sum the concentration: steps that agree give a
large sum, steps that disagree a small one, which a mean softmax cannot tell apart. Fitted by
the method of moments and refined by Minka's fixed point (Minka 2000, "Estimating a Dirichlet
distribution"), vectorised over trials, in numpy: no gradients.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln, zeta

EPS = 1e-4
FIXED_POINT_STEPS = 3  # each is safe from any start; Newton then converges quadratically


def inverse_digamma(y: np.ndarray, iterations: int = 5) -> np.ndarray:
    """x with digamma(x) = y: Newton's method from Minka's initialisation, which converges
    from every y (5 steps reach 14 digits; a warm start from elsewhere can overshoot below 0).
    trigamma is zeta(2, x)."""
    with np.errstate(divide="ignore"):  # np.where evaluates the branch it discards too
        x = np.where(y >= -2.22, np.exp(y) + 0.5, -1.0 / (y - digamma(1.0)))
    for _ in range(iterations):
        x = x - (digamma(x) - y) / zeta(2, x)
    return x


def moments(p: np.ndarray) -> np.ndarray:
    """Method-of-moments alpha for (trials, steps, classes) probabilities: the mean times a
    precision averaged in log space over classes (Minka's eq. 23)."""
    mean = p.mean(1)
    second = (p ** 2).mean(1)
    ratio = (mean - second) / np.maximum(second - mean ** 2, 1e-12)
    precision = np.exp(np.log(np.clip(ratio, 1e-2, 1e4)).mean(-1, keepdims=True))
    return mean * precision


def fit(p: np.ndarray, iterations: int = 10, tol: float = 1e-6) -> np.ndarray:
    """Maximum-likelihood alpha (trials, classes) for the steps of each trial.

    Method of moments, then Minka's fixed point (his eq. 9), then his Newton step (eqs.
    15-18, the Hessian's diagonal-plus-constant inverse) to `tol`: the fixed point alone
    crawls when the evidence is concentrated, Newton alone can start too far away.
    `p` is (trials, steps, classes) or (steps, classes); probabilities are clipped to
    [EPS, 1] and renormalised so a saturated softmax still has a finite likelihood.
    """
    single = p.ndim == 2
    p = np.clip(np.asarray(p, float)[None] if single else np.asarray(p, float), EPS, 1.0)
    p /= p.sum(-1, keepdims=True)
    log_p = np.log(p).mean(1)
    alpha = moments(p)
    for _ in range(FIXED_POINT_STEPS):
        alpha = inverse_digamma(digamma(alpha.sum(-1, keepdims=True)) + log_p)
    for _ in range(iterations):
        new = _newton(alpha, log_p)
        change = np.max(np.abs(new - alpha) / alpha)
        alpha = new
        if change < tol:
            break
    return alpha[0] if single else alpha


def _newton(alpha: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    """One Newton step on the Dirichlet log-likelihood, halved until alpha stays positive."""
    total = alpha.sum(-1, keepdims=True)
    g = digamma(total) - digamma(alpha) + log_p
    q = -zeta(2, alpha)
    z = zeta(2, total)
    b = (g / q).sum(-1, keepdims=True) / (1.0 / z + (1.0 / q).sum(-1, keepdims=True))
    step = (g - b) / q
    for _ in range(20):
        new = alpha - step
        if np.all(new > 0):
            return new
        step = step / 2
    return alpha


def log_likelihood(alpha: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Mean log density of the steps under Dir(alpha), per trial (for tests and diagnostics)."""
    p = np.clip(p, EPS, 1.0)
    p = p / p.sum(-1, keepdims=True)
    norm = gammaln(alpha.sum(-1)) - gammaln(alpha).sum(-1)
    return norm + ((alpha[:, None] - 1) * np.log(p)).sum(-1).mean(1)
