"""A Gaussian mixture, one component per class, updated online by incremental EM.

The sufficient statistics (responsibility sums, first and second moments) start from the
source domain with a pseudo-count, so the first target trials only nudge them; each new trial
adds its responsibilities (the E-step) and the parameters follow in closed form (the M-step).
No gradients, O(classes x dim^2) per trial.
"""
from __future__ import annotations

import numpy as np


class OnlineGMM:
    def __init__(self, means: np.ndarray, covs: np.ndarray, pseudo_count: float = 20.0,
                 reg: float = 1e-2, decay: float = 1.0):
        """`means` (classes, dim) and `covs` (classes, dim, dim) from the source domain.
        `decay` < 1 forgets old trials geometrically (for slow drift within a session)."""
        means, covs = np.asarray(means, float), np.asarray(covs, float)
        k, d = means.shape
        if covs.shape != (k, d, d):
            raise ValueError(f"covariances must be {(k, d, d)}, got {covs.shape}")
        self.reg, self.decay = reg, decay
        self.n = np.full(k, float(pseudo_count))
        self.s1 = self.n[:, None] * means
        self.s2 = self.n[:, None, None] * (covs + means[:, :, None] * means[:, None, :])
        self.trials = 0
        self._refresh()

    def _refresh(self) -> None:
        self.means = self.s1 / self.n[:, None]
        d = self.means.shape[1]
        covs = self.s2 / self.n[:, None, None] - self.means[:, :, None] * self.means[:, None, :]
        self.covs = 0.5 * (covs + covs.transpose(0, 2, 1)) + self.reg * np.eye(d)
        self.weights = self.n / self.n.sum()
        sign, logdet = np.linalg.slogdet(self.covs)
        self.precisions = np.linalg.inv(self.covs)
        self.log_norm = -0.5 * (logdet + d * np.log(2 * np.pi))

    def log_likelihood(self, x: np.ndarray) -> np.ndarray:
        """log N(x | mean_k, cov_k) for each component k."""
        diff = x[None] - self.means
        return self.log_norm - 0.5 * np.einsum("ki,kij,kj->k", diff, self.precisions, diff)

    def update(self, x: np.ndarray, resp: np.ndarray) -> None:
        """Add one observation with responsibilities `resp` (sums to 1) and re-solve."""
        self.n = self.decay * self.n + resp
        self.s1 = self.decay * self.s1 + resp[:, None] * x
        self.s2 = self.decay * self.s2 + resp[:, None, None] * np.outer(x, x)
        self.trials += 1
        self._refresh()

    def state(self) -> dict:
        return {"n": self.n.tolist(), "s1": self.s1.tolist(), "s2": self.s2.tolist(),
                "trials": self.trials, "reg": self.reg, "decay": self.decay}

    @classmethod
    def from_state(cls, state: dict) -> "OnlineGMM":
        gmm = cls.__new__(cls)
        gmm.n, gmm.s1, gmm.s2 = (np.asarray(state[k], float) for k in ("n", "s1", "s2"))
        gmm.trials, gmm.reg, gmm.decay = state["trials"], state["reg"], state["decay"]
        gmm._refresh()
        return gmm
