"""Two classification sets that ship with the code: scikit-learn's handwritten digits (8x8
real scans) and a harder procedural one, ten shape classes drawn at random position, size and
stroke with pixel noise (12x12)."""
from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SETS = ("digits", "shapes")
CLASSES = 10
SIDE = 12


def load(name: str, seed: int, test_size: float = 0.25
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test): x (n, features) float32 in [0, 1], split
    stratified by `seed`."""
    if name == "digits":
        d = load_digits()
        x, y = (d.data / 16.0).astype(np.float32), d.target
    elif name == "shapes":
        x, y = shapes(3000, np.random.default_rng(10_000 + seed))
    else:
        raise ValueError(f"unknown dataset {name!r}: one of {', '.join(SETS)}")
    tr, te = train_test_split(np.arange(len(y)), test_size=test_size, random_state=seed,
                              stratify=y)
    return x[tr], y[tr], x[te], y[te]


def shapes(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n images (n, SIDE * SIDE) of ten shapes: four bar orientations, plus, cross, box,
    disk, ring and corner; each moved, resized and thickened at random, with noise."""
    yy, xx = np.mgrid[:SIDE, :SIDE].astype(np.float32)
    labels = rng.integers(0, CLASSES, n)
    out = np.empty((n, SIDE * SIDE), np.float32)
    for i, c in enumerate(labels):
        cy, cx = rng.uniform(4.0, SIDE - 5.0, 2)
        r = rng.uniform(2.5, 4.0)
        w = rng.uniform(0.6, 1.2)
        dy, dx = yy - cy, xx - cx
        dist = np.hypot(dy, dx)
        inside = np.maximum(np.abs(dy), np.abs(dx)) <= r
        stroke = {
            0: np.abs(dy) <= w,
            1: np.abs(dx) <= w,
            2: np.abs(dy - dx) <= 1.4 * w,
            3: np.abs(dy + dx) <= 1.4 * w,
            4: (np.abs(dy) <= w) | (np.abs(dx) <= w),
            5: (np.abs(dy - dx) <= 1.4 * w) | (np.abs(dy + dx) <= 1.4 * w),
            6: np.abs(np.maximum(np.abs(dy), np.abs(dx)) - r) <= w,
            7: dist <= r,
            8: np.abs(dist - r) <= w,
            9: ((np.abs(dy - r) <= w) & (dx <= r)) | ((np.abs(dx - r) <= w) & (dy <= r)),
        }[int(c)] & (inside | (int(c) in (6, 8, 9)) & (dist <= 1.5 * r))
        img = stroke * rng.uniform(0.6, 1.0) + rng.normal(0, 0.25, stroke.shape)
        out[i] = np.clip(img, 0, 1).ravel()
    return out, labels
