"""VLN's episode metrics: SR, SPL, NE, OS and nDTW (Anderson et al. 2018; Ilharco et al. 2019).

SR: stopped within 1 m of the goal. SPL: success weighted by the expert's path length over
the longer of the two paths. NE: straight-line distance from the stop to the goal (m). OS:
the path came within 1 m of the goal at some point. nDTW: exp(-DTW(path, reference) /
(len(reference) * 3 m)), how closely the path follows the expert's.
"""
from __future__ import annotations

import numpy as np

from edgert.methods.janusvln.episodes import SUCCESS_M

NDTW_M = 3.0


def path_length(path: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(path, axis=0), axis=1).sum())


def dtw(path: np.ndarray, reference: np.ndarray) -> float:
    """Dynamic time warping distance between two (N, 2) paths (m)."""
    cost = np.linalg.norm(path[:, None] - reference[None], axis=-1)     # (N, M)
    acc = np.full((len(path) + 1, len(reference) + 1), np.inf)
    acc[0, 0] = 0.0
    for i in range(1, len(path) + 1):
        row = acc[i - 1, 1:] + cost[i - 1]           # from above
        diag = acc[i - 1, :-1] + cost[i - 1]         # from the diagonal
        best = np.minimum(row, diag)
        for j in range(1, len(reference) + 1):       # from the left: a running minimum
            acc[i, j] = min(best[j - 1], acc[i, j - 1] + cost[i - 1, j - 1])
    return float(acc[-1, -1])


def episode_metrics(path: np.ndarray, reference: np.ndarray, goal: tuple[float, float],
                    stopped: bool) -> dict[str, float]:
    """One episode's metrics from the agent's positions (N, 2) and the expert's (M, 2)."""
    to_goal = np.linalg.norm(path - np.asarray(goal), axis=1)
    success = float(stopped and to_goal[-1] <= SUCCESS_M)
    best = path_length(reference)
    return {"sr": success,
            "spl": success * best / max(path_length(path), best, 1e-9),
            "ne": float(to_goal[-1]),
            "os": float((to_goal <= SUCCESS_M).any()),
            "ndtw": float(np.exp(-dtw(path, reference) / (len(reference) * NDTW_M)))}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]} if rows else {}
