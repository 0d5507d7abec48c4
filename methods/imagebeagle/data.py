"""Real photographs cut into patches: the stimulus set (the photos that ship with
scikit-image and scikit-learn, so nothing is downloaded)."""
from __future__ import annotations

import numpy as np

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
          "immunohistochemistry", "camera", "coins", "moon", "horse", "grass", "gravel", "brick")


def photos() -> list[np.ndarray]:
    """Grey-level photos in [0, 1]."""
    from skimage import color, data, img_as_float
    from sklearn.datasets import load_sample_images

    out = []
    for name in PHOTOS:
        im = img_as_float(getattr(data, name)())
        out.append(color.rgb2gray(im) if im.ndim == 3 else im)
    out += [color.rgb2gray(img_as_float(im)) for im in load_sample_images().images]
    return out


def patches(size: int = 16, per_photo: int = 400, seed: int = 0) -> np.ndarray:
    """(patches, size * size): random crops with some contrast, each centred and scaled to
    unit norm."""
    rng = np.random.default_rng(seed)
    out = []
    for im in photos():
        rows = rng.integers(0, im.shape[0] - size, per_photo)
        cols = rng.integers(0, im.shape[1] - size, per_photo)
        out += [im[r:r + size, c:c + size].ravel() for r, c in zip(rows, cols)]
    x = np.array(out)
    x -= x.mean(1, keepdims=True)
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    keep = norm[:, 0] > 1e-3 * size  # flat patches (blown-out sky, black space) show nothing
    return x[keep] / norm[keep]
