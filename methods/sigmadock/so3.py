"""The isotropic Gaussian on SO(3) (IGSO(3)): sampling rotations of a given spread and the
score of the rotation a noised fragment underwent, both from the angle's density tabulated
once on a grid (the series converges fast for the spreads used here)."""
from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

OMEGA = np.linspace(1e-4, np.pi, 1000)     # rotation angles
SIGMA = np.geomspace(0.03, 2.0, 150)       # spreads (rad)
L = np.arange(300)[:, None, None]         # enough terms down to sigma = 0.03


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f(omega; sigma) = sum_l (2l + 1) exp(-l (l + 1) sigma^2 / 2) sin((l + 1/2) omega) /
    sin(omega / 2), its derivative in omega, and the CDF of the angle under the Haar
    measure (density f (1 - cos omega) / pi)."""
    s, w = SIGMA[None, :, None], OMEGA[None, None, :]
    decay = (2 * L + 1) * np.exp(-L * (L + 1) * s ** 2 / 2)
    half = np.sin(w / 2)
    f = (decay * np.sin((L + 0.5) * w) / half).sum(0)
    df = (decay * ((L + 0.5) * np.cos((L + 0.5) * w) * half
                   - 0.5 * np.cos(w / 2) * np.sin((L + 0.5) * w)) / half ** 2).sum(0)
    density = np.clip(f, 1e-12, None) * (1 - np.cos(OMEGA)) / np.pi
    cdf = np.cumsum(density, 1)
    return f, df, cdf / cdf[:, -1:]


F, DF, CDF = _tables()


def _row(sigma: float) -> int:
    return int(np.abs(SIGMA - sigma).argmin())


def sample(sigma: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n rotation vectors (axis x angle, (n, 3)) drawn from IGSO(3) of spread sigma."""
    omega = np.interp(rng.random(n), CDF[_row(sigma)], OMEGA)
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    return axis * omega[:, None]


def score(rotvec: np.ndarray, sigma: float) -> np.ndarray:
    """Gradient of log IGSO(3) density at the rotations `rotvec` (n, 3), as vectors in the
    rotation's tangent space: d log f / d omega along the axis."""
    omega = np.linalg.norm(rotvec, axis=1)
    row = _row(sigma)
    dlog = np.interp(omega, OMEGA, DF[row]) / np.maximum(np.interp(omega, OMEGA, F[row]),
                                                         1e-12)
    return rotvec / np.maximum(omega, 1e-9)[:, None] * dlog[:, None]


def expected_score_norm(sigma: float) -> float:
    """Root mean square of the score's norm at spread sigma (to weight the loss)."""
    rng = np.random.default_rng(0)
    return float(np.sqrt((np.linalg.norm(score(sample(sigma, 2000, rng), sigma), axis=1) ** 2)
                         .mean()))


def compose(rotvec: np.ndarray, rotation: Rotation) -> Rotation:
    """Apply rotation vectors on the left of `rotation` (a noise or denoising step)."""
    return Rotation.from_rotvec(rotvec) * rotation
