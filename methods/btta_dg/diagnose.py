"""Per-stage diagnostics of BTTA-DG on one held-out session, to see where class information is
lost: in the decoder (the Dirichlet features barely separate the classes), in the shift
between source and target features, or in the mixture's adaptation (it drifts away from the
target's classes, or its weights collapse onto one class)."""
from __future__ import annotations

import numpy as np

from edgert.methods.btta_dg.bayes import BayesianAdapter, SourceStats, features


def separation(means: np.ndarray, within: np.ndarray) -> float:
    """Between-class over within-class scatter (traces): 0 when the class means coincide."""
    between = np.cov(means.T, bias=True) if len(means) > 1 else np.zeros_like(within)
    return float(np.trace(np.atleast_2d(between)) / max(np.trace(within), 1e-12))


def class_means(x: np.ndarray, y: np.ndarray, classes: int) -> np.ndarray:
    """(classes, dim) means; NaN rows for classes the session lacks."""
    return np.stack([x[y == k].mean(0) if np.any(y == k) else np.full(x.shape[1], np.nan)
                     for k in range(classes)])


def shares(pred: np.ndarray, classes: int) -> list[float]:
    return (np.bincount(pred, minlength=classes) / max(len(pred), 1)).round(3).tolist()


def diagnose(source: SourceStats, probs: np.ndarray, y: np.ndarray, tempering: float,
             warmup: int, holdout_accuracy: float | None = None) -> dict:
    """Diagnostics of one held-out session: `probs` (trials, steps, classes) are the decoder's
    outputs on its aligned trials, `y` the true classes (used only here, never to adapt);
    `holdout_accuracy` is the decoder's on the source trials it was not fitted on (it tells
    a decoder that learnt nothing from one that does not carry over)."""
    classes = probs.shape[-1]
    x, prior = features(probs, source.features)
    adapter = BayesianAdapter(source, tempering, warmup)
    post = np.array([adapter.step(p)[0] for p in probs])
    target = class_means(x, y, classes)
    present = ~np.isnan(target[:, 0])
    within = np.mean([np.cov(x[y == k].T) for k in range(classes) if np.sum(y == k) > 1], 0)
    distance = lambda m: np.linalg.norm(m - target, axis=1)[present].round(3).tolist()  # noqa: E731
    return {
        "source_holdout_accuracy": None if holdout_accuracy is None else
        round(holdout_accuracy, 4),
        "source_separation": round(separation(source.means, source.covs.mean(0)), 4),
        "target_separation": round(separation(target[present], within), 4),
        "concentration_source": round(float(source.means.sum(1).mean()), 3),
        "concentration_target": round(float(x.sum(1).mean()), 3),
        "source_to_target_class_mean": distance(source.means),
        "mixture_to_target_class_mean": distance(adapter.gmm.means),
        "mixture_weights": adapter.gmm.weights.round(3).tolist(),
        "true_shares": shares(y, classes),
        "chance_accuracy": max(shares(y, classes)),
        "prior_shares": shares(prior.argmax(1), classes),
        "posterior_shares": shares(post.argmax(1), classes),
        "prior_accuracy": round(float(np.mean(prior.argmax(1) == y)), 4),
        "posterior_accuracy": round(float(np.mean(post.argmax(1) == y)), 4),
    }
