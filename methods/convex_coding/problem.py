"""The normative objective written in the representational similarity Q = Z^T Z, and its
convex programs.

Activities Z (units x stimuli) are read out by an affine decoder W Z + b with a weight cost
gamma ||W||^2 and pay an activity cost lambda ||Z||^2:

    min_{W,b} ||X - W Z - b||^2 + gamma ||W||^2 + lambda tr(Q)
        = gamma tr(Xc (H Q H + gamma I)^-1 Xc^T) + lambda tr(Q)

(H centres over stimuli, Xc = X H; push-through identity). Both terms are convex in Q, so the
non-convex problem in Z becomes a semidefinite program in Q: Q PSD is the linear code; adding
Q >= 0 elementwise (doubly non-negative) relaxes Q in the completely positive cone, i.e.
non-negative activities. `solve_affine` restricts the code to affine functions of the sources
(Z = B [X; 1], a linear autoencoder with non-negative units), where Q = [X; 1]^T G [X; 1] and
only the small G is a variable.
"""
from __future__ import annotations

import cvxpy as cp
import numpy as np

SOLVERS = ("CLARABEL", "SCS")
_OPTIONS = {"SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 100_000}, "CLARABEL": {}}


def centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean(1, keepdims=True)


def objective(q: np.ndarray, x: np.ndarray, gamma: float, energy: float) -> float:
    """The objective of any Q (from a solver, or Z^T Z of descended activities), per stimulus."""
    t = q.shape[0]
    h = np.eye(t) - 1.0 / t
    xc = centred(x)
    loss = gamma * np.trace(xc @ np.linalg.solve(h @ q @ h + gamma * np.eye(t), xc.T))
    return float((loss + energy * np.trace(q)) / t)


def _solve(problem: cp.Problem, solver: str) -> None:
    problem.solve(solver=solver, **_OPTIONS[solver])
    if problem.status not in ("optimal", "optimal_inaccurate"):
        raise RuntimeError(f"{solver}: {problem.status}")


def solve_free(x: np.ndarray, gamma: float, energy: float, nonneg: bool,
               solver: str = "CLARABEL") -> np.ndarray:
    """Optimal Q over all codes (T x T); `nonneg` adds Q >= 0 (non-negative activities).

    H Q H is written as Q - 1 a^T - a 1^T with (H Q H) 1 = 0: the same matrix, but sparse in
    the variables, which keeps the program small."""
    t = x.shape[1]
    q = cp.Variable((t, t), PSD=True)
    a = cp.Variable((t, 1))
    ones = np.ones((t, 1))
    qc = q - ones @ a.T - a @ ones.T
    cost = gamma * cp.matrix_frac(centred(x).T, qc + gamma * np.eye(t)) + energy * cp.trace(q)
    constraints = [qc @ ones == 0] + ([q >= 0] if nonneg else [])
    _solve(cp.Problem(cp.Minimize(cost / t), constraints), solver)
    return (q.value + q.value.T) / 2


def solve_affine(x: np.ndarray, gamma: float, energy: float,
                 solver: str = "CLARABEL") -> np.ndarray:
    """Optimal Q over non-negative affine codes Z = B [X; 1] (Q = Xa^T G Xa, G PSD, Q >= 0).

    The loss needs only the d x d block of G seen through C^(1/2), C = Xc Xc^T (push-through
    again), so the program's size does not grow with the stimuli except for Q >= 0."""
    d, t = x.shape
    xa = np.vstack([x, np.ones(t)])
    xc = centred(x)
    w, v = np.linalg.eigh(xc @ xc.T)
    root = (v * np.sqrt(np.maximum(w, 0.0))) @ v.T
    g = cp.Variable((d + 1, d + 1), PSD=True)
    loss = gamma * cp.matrix_frac(root, root @ g[:d, :d] @ root + gamma * np.eye(d))
    cost = loss + energy * cp.trace(g @ (xa @ xa.T))
    _solve(cp.Problem(cp.Minimize(cost / t), [xa.T @ g @ xa >= 0]), solver)
    return xa.T @ g.value @ xa


def linear_closed_form(x: np.ndarray, gamma: float, energy: float) -> np.ndarray:
    """The linear-code optimum in closed form: Q shares eigenvectors with Xc^T Xc and each
    eigenvalue s maps to max(0, sqrt(gamma s / lambda) - gamma) (the check on the solvers)."""
    xc = centred(x)
    s, v = np.linalg.eigh(xc.T @ xc)
    q = np.maximum(np.sqrt(gamma * np.maximum(s, 0.0) / energy) - gamma, 0.0)
    return (v * q) @ v.T
