"""The procedural image set: concepts are shape x colour x position x size x texture.

Each concept is drawn several times with small jitter (as THINGS has several images of each
concept); a fixed eighth of the concepts is held out of every training step, so retrieval and
reconstruction are scored on concepts the models never saw.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

SIZE = 32  # pixels per side
ATTRIBUTES = {
    "colour": ("red", "green", "blue", "yellow", "magenta", "cyan"),
    "position": ("top-left", "top-right", "bottom-left", "bottom-right"),
    "size": ("small", "large"),
    "shape": ("circle", "square", "triangle", "cross"),
    "texture": ("solid", "striped"),
}
RGB = {"red": (220, 50, 50), "green": (50, 180, 60), "blue": (50, 90, 230),
       "yellow": (230, 200, 40), "magenta": (200, 60, 200), "cyan": (40, 190, 200)}
CENTRES = {"top-left": (10, 10), "top-right": (10, 22), "bottom-left": (22, 10),
           "bottom-right": (22, 22)}  # (row, column)
RADII = {"small": 4.5, "large": 8.0}
BACKGROUND = 0.45
CONCEPTS = tuple(itertools.product(*(range(len(v)) for v in ATTRIBUTES.values())))
HELD_OUT_SEED = 7


def held_out(fraction: float = 0.125) -> np.ndarray:
    """Indices of the concepts never trained on (fixed for every run)."""
    rng = np.random.default_rng(HELD_OUT_SEED)
    return np.sort(rng.permutation(len(CONCEPTS))[:round(fraction * len(CONCEPTS))])


def training_concepts() -> np.ndarray:
    return np.setdiff1d(np.arange(len(CONCEPTS)), held_out())


def describe(concept: int) -> str:
    return " ".join(v[i] for v, i in zip(ATTRIBUTES.values(), CONCEPTS[concept]))


def _mask(shape: str, radius: float, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    if shape == "circle":
        return rows ** 2 + cols ** 2 <= radius ** 2
    if shape == "square":
        return (np.abs(rows) <= radius * 0.85) & (np.abs(cols) <= radius * 0.85)
    if shape == "triangle":
        return (rows <= radius * 0.8) & (rows >= -radius) & (np.abs(cols) <= (rows + radius) * 0.6)
    arm = radius * 0.35
    return ((np.abs(rows) <= arm) & (np.abs(cols) <= radius)) | (
        (np.abs(cols) <= arm) & (np.abs(rows) <= radius))


def render(concept: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """One image of `concept`, (3, SIZE, SIZE) float32 in [0, 1]; `rng` jitters position,
    size and tint (None: the concept's canonical image)."""
    colour, position, size, shape, texture = (v[i] for v, i in
                                              zip(ATTRIBUTES.values(), CONCEPTS[concept]))
    jitter = rng.normal(size=4) if rng is not None else np.zeros(4)
    centre = np.array(CENTRES[position]) + 1.0 * jitter[:2]
    radius = RADII[size] * (1 + 0.06 * jitter[2])
    rows, cols = np.mgrid[:SIZE, :SIZE].astype(float)
    mask = _mask(shape, radius, rows - centre[0], cols - centre[1])
    tint = np.array(RGB[colour]) / 255.0 * (1 + 0.05 * jitter[3])
    image = np.full((SIZE, SIZE, 3), BACKGROUND)
    paint = np.broadcast_to(tint, image.shape).copy()
    if texture == "striped":
        paint[((rows + cols) // 3 % 2 == 1)] *= 0.35
    image[mask] = paint[mask]
    return np.clip(image, 0, 1).transpose(2, 0, 1).astype(np.float32)


@dataclass
class ImageSet:
    """Images (n, 3, SIZE, SIZE) in [0, 1], and the concept each shows."""

    images: np.ndarray
    concepts: np.ndarray

    def attributes(self) -> np.ndarray:
        """(n, attributes) value indices, in ATTRIBUTES order."""
        return np.array([CONCEPTS[c] for c in self.concepts])

    def subset(self, idx: np.ndarray) -> "ImageSet":
        return ImageSet(self.images[idx], self.concepts[idx])


def image_set(concepts: np.ndarray, per_concept: int, seed: int = 0) -> ImageSet:
    """`per_concept` jittered images of each concept (the first one canonical)."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.asarray(concepts), per_concept)
    images = [render(c, rng if k % per_concept else None) for k, c in enumerate(ids)]
    return ImageSet(np.stack(images), ids)
