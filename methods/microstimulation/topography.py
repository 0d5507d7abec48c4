"""The sheet's category map: each unit's selectivity profile, how smooth the map is against a
shuffled-position control, where each category's patch is, and which site of another sheet
best matches a site of this one."""
from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter
from scipy.spatial import KDTree
from scipy.spatial.distance import cdist


def selectivity(a: np.ndarray, y: np.ndarray, classes: int) -> np.ndarray:
    """(units, classes) d': mean response to a category minus to all others, over the pooled
    standard deviation (0 for a silent unit)."""
    out = np.zeros((a.shape[1], classes))
    for c in range(classes):
        inside, rest = a[y == c], a[y != c]
        sd = np.sqrt((inside.var(0) + rest.var(0)) / 2)
        out[:, c] = np.divide(inside.mean(0) - rest.mean(0), sd, out=np.zeros(a.shape[1]),
                              where=sd > 1e-9)
    return out


def neighbour_pairs(positions: np.ndarray, radius: float = 1.5) -> np.ndarray:
    """(pairs, 2) unit indices at most `radius` apart (the 8-neighbourhood on a grid)."""
    return KDTree(positions).query_pairs(radius, output_type="ndarray")


def smoothness(profiles: np.ndarray, pairs: np.ndarray) -> float:
    """Mean Pearson r between the selectivity profiles of neighbouring units: high where
    units of like selectivity cluster into patches."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.nan_to_num(np.corrcoef(profiles))  # a silent unit's flat profile: r = 0
    return float(r[pairs[:, 0], pairs[:, 1]].mean())


def shuffled_smoothness(profiles: np.ndarray, pairs: np.ndarray, rng: np.random.Generator,
                        shuffles: int = 20) -> float:
    """The same index with units' positions permuted: what it is with no topography."""
    return float(np.mean([smoothness(profiles[rng.permutation(len(profiles))], pairs)
                          for _ in range(shuffles)]))


def smoothed(profiles: np.ndarray, side: int, sigma: float) -> np.ndarray:
    """(units, classes) profiles averaged over a Gaussian of width `sigma` around each site,
    zero beyond the sheet's edge: what a multi-unit electrode records there (at a corner it
    samples fewer units), and robust to single odd units."""
    maps = profiles.T.reshape(-1, side, side)
    return np.stack([gaussian_filter(m, sigma, mode="constant") for m in maps]
                    ).reshape(len(maps), -1).T


def patch_centres(local: np.ndarray) -> np.ndarray:
    """(classes,) the unit at the peak of each category's smoothed selectivity map."""
    return local.argmax(0)


def match_sites(local_a: np.ndarray, sites: np.ndarray, local_b: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """For each site of sheet A, the unit of sheet B whose local selectivity profile is
    nearest (Euclidean: strength matters, not only which digits it prefers), and the Pearson
    r of the two profiles."""
    best = cdist(local_a[sites], local_b).argmin(1)
    return best, np.array([np.corrcoef(local_a[s], local_b[m])[0, 1]
                           for s, m in zip(sites, best)])
