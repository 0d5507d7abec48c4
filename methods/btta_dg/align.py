"""Euclidean alignment (He & Wu 2019): whiten each trial by the inverse square root of the
user's mean spatial covariance, so every user's trials share an identity reference.

Offline, per (user, session) over all its trials, for training; online, incrementally over
the trials seen so far, for a new user. Gradient-free, O(channels^3) per trial.
"""
from __future__ import annotations

import numpy as np
from scipy import linalg


def covariance(x: np.ndarray) -> np.ndarray:
    """Spatial covariance of (channels, samples) or (trials, channels, samples)."""
    x = x - x.mean(-1, keepdims=True)
    return x @ x.swapaxes(-1, -2) / x.shape[-1]


def inverse_sqrt(r: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    w, v = linalg.eigh(r)
    return (v / np.sqrt(np.maximum(w, eps * w.max()))) @ v.T


def align_offline(x: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Euclidean alignment of each group (user, session) with its own mean covariance."""
    out = np.empty_like(x)
    for g in np.unique(groups):
        idx = groups == g
        out[idx] = inverse_sqrt(covariance(x[idx]).mean(0)) @ x[idx]
    return out


class IncrementalAlignment:
    """Euclidean alignment with the reference built from the trials seen so far (this one too)."""

    def __init__(self, channels: int):
        self.total = np.zeros((channels, channels))
        self.count = 0

    def __call__(self, trial: np.ndarray) -> np.ndarray:
        self.total += covariance(trial)
        self.count += 1
        return (inverse_sqrt(self.total / self.count) @ trial).astype(np.float32)

    def state(self) -> dict:
        return {"total": self.total.tolist(), "count": self.count}

    @classmethod
    def from_state(cls, state: dict) -> "IncrementalAlignment":
        align = cls(len(state["total"]))
        align.total = np.asarray(state["total"], float)
        align.count = int(state["count"])
        return align
