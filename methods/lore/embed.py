"""Low-rank ordinal embedding: a PSD Gram matrix K fitted to triplets by a logistic loss plus
the Schatten-p quasi-norm of K, minimised by iteratively reweighted singular-value
thresholding (IRSVT). p = 1 is the nuclear norm, the convex baseline, with the same optimiser.

For a triplet (i, j, k), "i closer to j than to k", the margin is D_ik - D_ij with
D_ab = K_aa + K_bb - 2 K_ab, linear in K; the loss is log(1 + exp(-margin)). The Schatten-p
term sum_i sigma_i^p (p < 1) is concave in the singular values, so each outer step majorises it
by its tangent, sum_i w_i sigma_i with w_i = p (sigma_i + eps)^(p-1): small singular values get
large weights and die, large ones are barely shrunk (less bias than the nuclear norm).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit


@dataclass
class Fit:
    gram: np.ndarray        # (n, n) PSD
    spectrum: np.ndarray    # its eigenvalues, descending

    def rank(self, tol: float) -> int:
        return rank(self.spectrum, tol)


def rank(spectrum: np.ndarray, tol: float) -> int:
    """Eigenvalues above `tol` times the largest: the estimated dimension."""
    return int(np.sum(spectrum > tol * spectrum.max())) if spectrum.max() > 0 else 0


def gram_of(points: np.ndarray) -> np.ndarray:
    """The centred Gram matrix of coordinates (n, d): same distances, K 1 = 0."""
    centred = points - points.mean(0)
    return centred @ centred.T


def margins(gram: np.ndarray, t: np.ndarray) -> np.ndarray:
    """D_ik - D_ij per triplet (i, j, k): positive when K agrees with the answer."""
    diag = np.diag(gram)
    i, j, k = t.T
    return diag[k] - diag[j] - 2 * gram[i, k] + 2 * gram[i, j]


def losses_per_triplet(gram: np.ndarray, t: np.ndarray) -> np.ndarray:
    return np.logaddexp(0, -margins(gram, t))


def loss(gram: np.ndarray, t: np.ndarray) -> float:
    return float(np.mean(losses_per_triplet(gram, t)))


def gradient(gram: np.ndarray, t: np.ndarray) -> np.ndarray:
    """d loss / d K: each triplet adds c (A_ik - A_ij), A_ab = (e_a - e_b)(e_a - e_b)^T."""
    n = len(gram)
    c = -expit(-margins(gram, t)) / len(t)  # d log(1 + exp(-m)) / dm, per triplet
    i, j, k = t.T
    rows = np.concatenate([i, k, i, k, i, j, i, j])
    cols = np.concatenate([i, k, k, i, i, j, j, i])
    vals = np.concatenate([c, c, -c, -c, -c, -c, c, c])
    return np.bincount(rows * n + cols, vals, n * n).reshape(n, n)


def threshold(y: np.ndarray, cut: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted singular-value soft-thresholding onto the PSD cone: eigenvalues (descending)
    minus their cut, clipped at zero. With cuts ascending as eigenvalues descend (what the
    reweighting gives) this is the exact proximal step."""
    vals, vecs = np.linalg.eigh((y + y.T) / 2)
    vals, vecs = vals[::-1], vecs[:, ::-1]
    kept = np.maximum(vals - cut, 0)
    return (vecs * kept) @ vecs.T, kept


def irsvt(t: np.ndarray, n: int, lam: float, p: float, eps: float, iters: int,
          start: np.ndarray | None = None, tol: float = 1e-5) -> Fit:
    """Minimise loss(K) + lam * sum sigma_i(K)^p over PSD K by proximal gradient steps, each
    with weights w_i = p (sigma_i + eps)^(p-1) from the current spectrum (p = 1: plain
    nuclear-norm proximal gradient) and a backtracking step size."""
    gram = np.zeros((n, n)) if start is None else start.copy()
    spectrum = np.clip(np.linalg.eigvalsh(gram)[::-1], 0, None)
    step, value = 1.0, loss(gram, t)
    for _ in range(iters):
        weights = p * (spectrum + eps) ** (p - 1)
        grad = gradient(gram, t)
        while True:
            new, kept = threshold(gram - step * grad, step * lam * weights)
            diff = new - gram
            new_value = loss(new, t)
            if new_value <= value + np.sum(grad * diff) + np.sum(diff ** 2) / (2 * step):
                break
            step /= 2
        change = np.linalg.norm(diff) / max(np.linalg.norm(gram), 1e-12)
        gram, spectrum, value, step = new, kept, new_value, step * 1.5
        if change < tol:
            break
    return Fit(gram, spectrum)


def accuracy(gram: np.ndarray, t: np.ndarray) -> float:
    """Share of triplets (i, j, k) that K answers as given (i closer to j than to k)."""
    return float(np.mean(margins(gram, t) > 0))
