"""The three cases: each has inputs, the true answer, a Pupil that is right only under an
assumption, and the variable that measures how far that assumption is broken.

- pendulum: period from amplitude and length. Truth: T = 4 sqrt(L/g) K(sin^2(theta0/2))
  (complete elliptic integral, scipy). Pupil: the small-angle T = 2 pi sqrt(L/g), which
  ignores the amplitude. The Tutor may correct L.
- projectile: range from speed, launch angle and quadratic drag k (1/m). Truth: the
  trajectory integrated (scipy solve_ivp) to landing. Pupil: the vacuum range
  v0^2 sin(2 angle) / g, which ignores drag. The Tutor may correct v0 and the angle.
- digits: scikit-learn's handwritten digits. Pupil: nearest class template (a linear
  classifier: one mean image per class). The Tutor may correct every pixel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.integrate import solve_ivp
from scipy.special import ellipk
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

G = 9.81
CASES = ("pendulum", "projectile", "digits")


@dataclass
class Split:
    """Inputs (n, d) float32, targets (n,) (regression: positive reals; digits: labels),
    and `strain` (n,): how far each sample breaks the Pupil's assumption."""

    x: np.ndarray
    y: np.ndarray
    strain: np.ndarray


def pendulum_period(theta0: np.ndarray, length: np.ndarray) -> np.ndarray:
    return 4 * np.sqrt(length / G) * ellipk(np.sin(theta0 / 2) ** 2)


def pendulum(n: int, rng: np.random.Generator, theta_max: float = 2.6,
             theta_min: float = 0.05) -> Split:
    """Amplitude theta0 (rad) and length L (m); strain = theta0."""
    theta = rng.uniform(theta_min, theta_max, n)
    length = rng.uniform(0.2, 2.0, n)
    x = np.stack([theta, length], 1).astype(np.float32)
    return Split(x, pendulum_period(theta, length).astype(np.float32), theta)


def projectile_range(v0: float, angle: float, k: float) -> float:
    """Range of a point mass launched from the ground with drag acceleration -k |v| v."""
    def f(_, s):
        vx, vy = s[2], s[3]
        speed = np.hypot(vx, vy)
        return [vx, vy, -k * speed * vx, -G - k * speed * vy]

    def landed(_, s):
        return s[1]
    landed.terminal, landed.direction = True, -1
    s0 = [0.0, 1e-9, v0 * np.cos(angle), v0 * np.sin(angle)]
    sol = solve_ivp(f, (0, 4 * v0 / G + 1), s0, events=landed, rtol=1e-8, atol=1e-9)
    return float(sol.y_events[0][0][0])


def projectile(n: int, rng: np.random.Generator, k_max: float = 0.05,
               k_min: float = 0.0) -> Split:
    """Speed v0 (m/s), angle (rad), drag k (1/m); strain = k v0^2 / g, drag over gravity at
    launch."""
    v0 = rng.uniform(5, 40, n)
    angle = rng.uniform(np.radians(10), np.radians(80), n)
    k = rng.uniform(k_min, k_max, n)
    y = np.array([projectile_range(*a) for a in zip(v0, angle, k)], np.float32)
    return Split(np.stack([v0, angle, k], 1).astype(np.float32), y, k * v0 ** 2 / G)


def digits(seed: int) -> tuple[Split, Split]:
    """Train and test splits of the real digits (8x8 in [0, 1]); strain is filled in once
    the Pupil exists (its distance to the right template against the nearest wrong one)."""
    d = load_digits()
    x, y = (d.data / 16.0).astype(np.float32), d.target
    tr, te = train_test_split(np.arange(len(y)), test_size=0.25, random_state=seed,
                              stratify=y)
    return (Split(x[tr], y[tr], np.zeros(len(tr))), Split(x[te], y[te], np.zeros(len(te))))


class Pupil:
    """The fixed model. `inputs` are the columns the Tutor may correct, `correct(x, delta)`
    applies a correction, `__call__(x)` gives the Pupil's output (regression: the answer;
    digits: logits)."""

    def __init__(self, case: str, train: Split | None = None):
        self.case = case
        if case == "pendulum":
            self.inputs = [1]
        elif case == "projectile":
            self.inputs = [0, 1]
        else:
            x, y = torch.as_tensor(train.x), torch.as_tensor(train.y)
            self.templates = torch.stack([x[y == c].mean(0) for c in range(10)])  # (10, 64)
            self.temperature = float(torch.cdist(x, self.templates).pow(2).mean()) / 10
            self.inputs = list(range(x.shape[1]))

    def bound(self, h: torch.Tensor) -> torch.Tensor:
        """The correction applied for the Tutor's raw output: pixels move by at most their
        range (tanh), physical inputs by any amount."""
        return torch.tanh(h) if self.case == "digits" else h

    def correct(self, x: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
        """Lengths and speeds are corrected by a factor exp(delta) (relative, and they stay
        positive); angles and pixels by adding delta."""
        if self.case == "pendulum":
            return torch.stack([x[:, 0], x[:, 1] * torch.exp(delta[:, 0])], 1)
        if self.case == "projectile":
            return torch.stack([x[:, 0] * torch.exp(delta[:, 0]), x[:, 1] + delta[:, 1],
                                x[:, 2]], 1)
        return x + delta

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.case == "pendulum":
            return 2 * torch.pi * torch.sqrt(x[:, 1] / G)
        if self.case == "projectile":
            return x[:, 0] ** 2 * torch.sin(2 * x[:, 1]).clamp_min(1e-6) / G
        return -torch.cdist(x, self.templates).pow(2) / self.temperature

    def margin(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Digits: the right template's squared distance minus the nearest wrong one's
        (> 0 where the one-template-per-class assumption fails)."""
        d = torch.cdist(torch.as_tensor(x), self.templates).pow(2).numpy()
        right = d[np.arange(len(y)), y]
        d[np.arange(len(y)), y] = np.inf
        return (right - d.min(1)) / self.temperature
