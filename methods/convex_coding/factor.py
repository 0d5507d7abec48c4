"""Activities back from a similarity matrix Q, and how faithfully they give Q back.

Linear codes: any Z with Z^T Z = Q is the eigendecomposition up to a rotation. Non-negative
codes: a symmetric non-negative factorisation Z >= 0, Z^T Z ~= Q (the doubly non-negative Q
is only a relaxation of the completely positive one, so the fit error measures tightness).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import minimize


RANK_TOL = 1e-3  # eigenvalues below this share of the largest are solver noise


def numerical_rank(q: np.ndarray) -> int:
    w = np.linalg.eigvalsh(q)
    return int((w > RANK_TOL * max(w.max(), 1e-12)).sum())


def eig_factor(q: np.ndarray) -> np.ndarray:
    """Z (rank x stimuli) with Z^T Z = Q, from the eigenvalues above the rank tolerance."""
    w, v = np.linalg.eigh(q)
    keep = w > RANK_TOL * max(w.max(), 1e-12)
    return (v[:, keep] * np.sqrt(w[keep])).T


def tightness(z: np.ndarray, q: np.ndarray) -> float:
    """Relative error of Z^T Z against Q (0 = the relaxation is attained by these Z)."""
    return float(np.linalg.norm(z.T @ z - q) / np.linalg.norm(q))


def symnmf(q: np.ndarray, units: int, rng: np.random.Generator, starts: int = 3) -> np.ndarray:
    """Z >= 0 (units x stimuli) minimising ||Q - Z^T Z||^2, best of random starts (L-BFGS-B
    with bounds: the factorisation is non-convex, the restarts guard its local minima)."""
    t = q.shape[0]
    scale = np.sqrt(max(np.trace(q), 1e-12) / (units * t))

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        z = flat.reshape(units, t)
        r = z.T @ z - q
        return float((r ** 2).sum()), (4 * z @ r).ravel()

    fits = [minimize(loss, rng.uniform(0, 2 * scale, units * t), jac=True, method="L-BFGS-B",
                     bounds=[(0, None)] * (units * t), options={"maxiter": 5000})
            for _ in range(starts)]
    return min(fits, key=lambda f: f.fun).x.reshape(units, t)


def fewest_units(q: np.ndarray, rng: np.random.Generator, tol: float = 0.01) -> np.ndarray:
    """The smallest symmetric NMF (from rank(Q) to 2 rank(Q) units) with Z^T Z within `tol` of
    Q, else the closest: a non-negative code can need more units than Q's rank (ON and OFF
    units), and more units than needed leave the factorisation free to rotate."""
    rank = max(numerical_rank(q), 1)
    fits = []
    for units in range(rank, 2 * rank + 1):
        fits.append(symnmf(q, units, rng))
        if tightness(fits[-1], q) < tol:
            break
    return min(fits, key=lambda z: tightness(z, q))
