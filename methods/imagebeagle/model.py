"""The embedding and the two kinds of model unit whose preferred stimuli are searched for.

- Embedding: PCA of the patches (whitened), the space the k-nearest-neighbour graph lives in.
- Model neurons: a baseline firing rate plus a tuned drive, rectified at zero: stimuli can
  push them above AND below baseline (two-tailed, as cortical neurons with spontaneous rates).
- Network units: ReLU of a tuned drive with no baseline: silent for half the stimuli, so only
  the top tail carries information (one-tailed).
Both see the embedding through a random tuning vector; responses carry Poisson-like noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import PCA


def embed(x: np.ndarray, dims: int, seed: int = 0) -> np.ndarray:
    return PCA(dims, whiten=True, random_state=seed).fit_transform(x)


@dataclass
class Units:
    tuning: np.ndarray   # (units, dims), unit norm
    baseline: np.ndarray  # (units,); 0 for network units
    gain: float
    noise: float

    def rates(self, e: np.ndarray) -> np.ndarray:
        """Noise-free responses (stimuli, units)."""
        return np.maximum(self.baseline + self.gain * e @ self.tuning.T, 0.0)

    def respond(self, e: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        r = self.rates(e)
        return np.maximum(r + self.noise * np.sqrt(r + 1e-9) * rng.standard_normal(r.shape), 0)


def make_units(count: int, dims: int, rng: np.random.Generator, baseline: float,
               gain: float = 1.0, noise: float = 0.3) -> Units:
    w = rng.standard_normal((count, dims))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    return Units(w, np.full(count, baseline), gain, noise)
