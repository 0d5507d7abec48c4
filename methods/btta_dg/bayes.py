"""BTTA-DG's adaptation: Dirichlet projection + GMM-driven Bayesian inference, per trial.

For a trial's step distributions p_1..p_T: alpha = Dirichlet fit, x = log alpha. The network's
prediction alpha / sum(alpha) is the prior; the mixture over x, kept for this user, gives a
likelihood per class; the posterior is prior x (weight x likelihood)^tempering. The posterior is
then the E-step of one incremental EM update. During the first `warmup` trials the mixture
learns but does not vote. State is plain JSON, so a user's adaptation survives restarts.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edgert.methods.btta_dg import dirichlet
from edgert.methods.btta_dg.gmm import OnlineGMM


def write_json(path: Path, payload: dict) -> None:
    """Write atomically: a crash mid-write keeps the previous file."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(path)


@dataclass
class SourceStats:
    """Per-class mean and covariance of the features on held-out source trials."""

    means: np.ndarray
    covs: np.ndarray
    features: str = "dirichlet"

    def to_dict(self) -> dict:
        return {"means": self.means.tolist(), "covs": self.covs.tolist(),
                "features": self.features}

    @classmethod
    def from_dict(cls, d: dict) -> "SourceStats":
        return cls(np.asarray(d["means"], float), np.asarray(d["covs"], float),
                   d.get("features", "dirichlet"))


def features(probs: np.ndarray, kind: str = "dirichlet") -> tuple[np.ndarray, np.ndarray]:
    """(feature, prior) per trial from (trials, steps, classes): log alpha and alpha's mean, or
    for the ablation the log of the mean softmax and the mean softmax itself."""
    if kind == "dirichlet":
        alpha = dirichlet.fit(probs)
        return np.log(alpha), alpha / alpha.sum(-1, keepdims=True)
    if kind == "mean_softmax":
        mean = np.clip(probs.mean(1), dirichlet.EPS, 1.0)
        return np.log(mean), mean / mean.sum(-1, keepdims=True)
    raise ValueError(f"features must be 'dirichlet' or 'mean_softmax', got {kind!r}")


def source_stats(probs: np.ndarray, labels: np.ndarray, kind: str = "dirichlet") -> SourceStats:
    """Class-conditional feature statistics from labelled source trials."""
    x, _ = features(probs, kind)
    classes = probs.shape[-1]
    missing = [k for k in range(classes) if not np.any(labels == k)]
    if missing:
        raise ValueError(f"source statistics need trials of every class; none of {missing}")
    means = np.stack([x[labels == k].mean(0) for k in range(classes)])
    covs = np.stack([np.cov(x[labels == k].T) if np.sum(labels == k) > 1 else
                     np.eye(classes) for k in range(classes)])
    return SourceStats(means, covs, kind)


@dataclass
class BayesianAdapter:
    source: SourceStats
    tempering: float = 1.0
    warmup: int = 4
    pseudo_count: float = 10.0
    use_gmm: bool = True
    gmm: OnlineGMM | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.gmm is None:
            self.gmm = OnlineGMM(self.source.means, self.source.covs, self.pseudo_count)

    def step(self, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(posterior, prior) for one trial's (steps, classes) probabilities; adapts."""
        x, prior = features(probs[None], self.source.features)
        x, prior = x[0], prior[0]
        if not self.use_gmm:
            return prior, prior
        log_post = np.log(prior)
        if self.gmm.trials >= self.warmup:
            vote = np.log(self.gmm.weights) + self.gmm.log_likelihood(x)
            log_post = log_post + self.tempering * vote
        post = np.exp(log_post - log_post.max())
        post /= post.sum()
        self.gmm.update(x, post)
        return post, prior

    def state(self) -> dict:
        return {"source": self.source.to_dict(), "tempering": self.tempering,
                "warmup": self.warmup, "pseudo_count": self.pseudo_count,
                "use_gmm": self.use_gmm, "gmm": self.gmm.state()}

    def save(self, path: Path) -> None:
        write_json(path, self.state())

    @classmethod
    def load(cls, path: Path) -> "BayesianAdapter":
        state = json.loads(Path(path).read_text())
        return cls(SourceStats.from_dict(state["source"]), state["tempering"], state["warmup"],
                   state["pseudo_count"], state["use_gmm"], OnlineGMM.from_state(state["gmm"]))
