"""A procedural robot tabletop, rendered: a gripper (open or closed), blocks with letters,
a small coloured dot and a thin arrow.

Scenes come in episodes, as a robot's camera frames do: the table, the blocks, their letters
and the dot stay for the episode; the gripper, the arrow and small shifts change per frame.
The robot's base view is low resolution (BASE pixels), where the dot's colour, the arrow's
direction and the letters no longer resolve; the high-resolution view (HIGH) shows them.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

HIGH = 48
BASE = 16
COLORS = {"red": (220, 40, 40), "green": (40, 180, 60), "blue": (50, 80, 230),
          "yellow": (235, 215, 40)}
LETTERS = ("a", "b", "c", "d", "e")
ARROWS = ("left", "right", "up", "down")
PLACES = ("left", "middle", "right")


@dataclass(frozen=True)
class Block:
    color: str
    place: str
    letter: str


@dataclass(frozen=True)
class Episode:
    """What stays the same over an episode's frames."""

    id: int
    table: tuple[int, int, int]
    blocks: tuple[Block, ...]
    dot: str


@dataclass(frozen=True)
class Frame:
    """One camera frame: its episode, the per-frame state, and the rendered image."""

    id: int
    episode: Episode
    gripper_open: bool
    arrow: str
    image: np.ndarray  # HIGH x HIGH x 3, uint8


def episode(rng: np.random.Generator, id: int) -> Episode:
    colors = rng.choice(list(COLORS), size=rng.integers(1, 4), replace=False)
    places = rng.choice(PLACES, size=len(colors), replace=False)
    blocks = tuple(Block(str(c), str(p), str(rng.choice(LETTERS))) for c, p in
                   zip(colors, places))
    table = tuple(int(v) for v in rng.integers(90, 170, 3))
    return Episode(id, table, blocks, str(rng.choice(list(COLORS))))


def frame(ep: Episode, rng: np.random.Generator, id: int) -> Frame:
    """Render one frame of the episode with fresh gripper state, arrow and jitter."""
    gripper_open = bool(rng.random() < 0.5)
    arrow = str(rng.choice(ARROWS))
    img = np.empty((HIGH, HIGH, 3), np.uint8)
    img[:] = ep.table
    dx, dy = (int(v) for v in rng.integers(-2, 3, 2))
    _gripper(img, gripper_open, dx)
    for block in ep.blocks:
        _block(img, block, dx, dy)
    _dot(img, ep.dot, dx, dy)
    _arrow(img, arrow, rng)
    noise = rng.normal(0, 6, img.shape)
    img = np.clip(img + noise, 0, 255).astype(np.uint8)
    return Frame(id, ep, gripper_open, arrow, img)


def _gripper(img: np.ndarray, open_: bool, dx: int) -> None:
    cx, gap = HIGH // 2 + dx, 7 if open_ else 1
    cv2.rectangle(img, (cx - 9, 1), (cx + 9, 4), (40, 40, 40), -1)
    for side in (-1, 1):
        x = cx + side * (gap + 2)
        cv2.rectangle(img, (x - 1, 4), (x + 1, 13), (40, 40, 40), -1)


def _block(img: np.ndarray, block: Block, dx: int, dy: int) -> None:
    x = {"left": 8, "middle": 24, "right": 40}[block.place] + dx
    y = 33 + dy
    cv2.rectangle(img, (x - 6, y - 6), (x + 6, y + 6), COLORS[block.color], -1)
    cv2.putText(img, block.letter.upper(), (x - 4, y + 4), cv2.FONT_HERSHEY_PLAIN, 0.8,
                (255, 255, 255), 1, cv2.LINE_AA)


def _dot(img: np.ndarray, color: str, dx: int, dy: int) -> None:
    x, y = 6 + dx, 20 + dy
    cv2.rectangle(img, (x, y), (x + 1, y + 1), COLORS[color], -1)


def _arrow(img: np.ndarray, direction: str, rng: np.random.Generator) -> None:
    cx, cy = int(rng.integers(34, 42)), int(rng.integers(14, 20))
    step = {"left": (-4, 0), "right": (4, 0), "up": (0, -4), "down": (0, 4)}[direction]
    start, end = (cx - step[0], cy - step[1]), (cx + step[0], cy + step[1])
    cv2.arrowedLine(img, start, end, (250, 250, 250), 1, cv2.LINE_8, tipLength=0.5)


def view(image: np.ndarray, size: int) -> np.ndarray:
    """The image as the model sees it at `size` pixels: float32, channels first, 0..1."""
    small = image if image.shape[0] == size else cv2.resize(image, (size, size),
                                                             interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(small.transpose(2, 0, 1), dtype=np.float32) / 255.0
