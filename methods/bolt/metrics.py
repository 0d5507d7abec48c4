"""What a robot needs to know about its answers: accuracy and how far to trust the confidence
(NLL, Brier, ECE over 15 bins, the risk-coverage curve and its area), plus the failure modes
the paper counts (invalid options, confident mistakes, flips)."""
from __future__ import annotations

import numpy as np

BINS = 15
OVERCONFIDENT = 0.7


def ece(p: np.ndarray, answer: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error: |accuracy - confidence| per confidence bin, weighted."""
    conf, right = p.max(1), p.argmax(1) == answer
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(conf, edges[1:-1]), 0, bins - 1)
    return float(sum(abs(right[which == b].mean() - conf[which == b].mean()) * np.mean(
        which == b) for b in range(bins) if np.any(which == b)))


def risk_coverage(p: np.ndarray, answer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Error rate among the most confident answers, for every coverage from 1/N to 1."""
    order = np.argsort(-p.max(1), kind="stable")
    wrong = (p.argmax(1) != answer)[order]
    n = np.arange(1, len(wrong) + 1)
    return n / len(wrong), np.cumsum(wrong) / n


def risk_at(p: np.ndarray, answer: np.ndarray, points: int = 20) -> list[tuple[float, float]]:
    """The risk-coverage curve at `points` evenly spaced coverages (for the report)."""
    coverage, risk = risk_coverage(p, answer)
    at = np.linspace(0, len(risk) - 1, points).round().astype(int)
    return [(float(coverage[i]), float(risk[i])) for i in at]


def aurc(p: np.ndarray, answer: np.ndarray) -> float:
    return float(risk_coverage(p, answer)[1].mean())


def summary(p: np.ndarray, answer: np.ndarray, valid: np.ndarray) -> dict[str, float]:
    """Every metric for option distributions `p` (N, K); `valid` marks real options."""
    n = np.arange(len(answer))
    pick = p.argmax(1)
    onehot = np.zeros_like(p)
    onehot[n, answer] = 1
    wrong = pick != answer
    return {
        "accuracy": float(np.mean(~wrong)),
        "nll": float(-np.log(p[n, answer] + 1e-12).mean()),
        "brier": float(((p - onehot) ** 2).sum(1).mean()),
        "ece": ece(p, answer),
        "aurc": aurc(p, answer),
        "invalid_option_rate": float(np.mean(~valid[n, pick])),
        "overconfident_wrong": float(np.mean(wrong & (p.max(1) >= OVERCONFIDENT))),
    }
