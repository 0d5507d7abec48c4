"""Procedural houses and an egocentric camera in them: the seeded world JanusVLN learns in.

A house is a grid of 0.25-m cells: rooms of 3 x 3 m with tinted walls, doors 1 m wide
between neighbouring rooms (a spanning tree of the rooms plus one more door), and landmarks,
coloured 0.5-m blocks of a named kind ("the red sofa"). The camera is a column raycaster
over that grid: RGB with distance shading and darker x-facing walls, and the metric depth
of every pixel (walls, floor and ceiling), which is what the geometric encoder learns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CELL = 0.25          # m per grid cell, one FORWARD step
ROOM = 12            # cells per room side (3 m)
WALL_HEIGHT = 2.0    # m; the camera is at half of it
SIZE = 32            # rendered image side, pixels
FOV = np.pi / 2      # horizontal field of view
MAX_DEPTH = 12.0     # m, where rays stop
FREE, WALL = 0, 1    # grid values; landmark k is 2 + k

KINDS = {  # landmark kind -> RGB in [0, 1]
    "sofa": (0.85, 0.12, 0.12), "lamp": (0.95, 0.85, 0.1), "plant": (0.1, 0.7, 0.15),
    "table": (0.55, 0.3, 0.1), "bed": (0.55, 0.15, 0.75), "fridge": (0.95, 0.95, 0.95),
    "tv": (0.08, 0.08, 0.08), "shelf": (0.1, 0.75, 0.8), "piano": (0.2, 0.2, 0.7),
    "chair": (0.95, 0.5, 0.1), "rug": (0.95, 0.45, 0.7), "clock": (0.5, 0.7, 0.2),
}
TINTS = {  # room tint name -> wall RGB
    "grey": (0.6, 0.6, 0.6), "blue": (0.45, 0.55, 0.8), "green": (0.5, 0.72, 0.5),
    "yellow": (0.8, 0.76, 0.45), "pink": (0.8, 0.55, 0.6), "purple": (0.6, 0.5, 0.75),
}
FLOOR, CEILING = np.array((0.35, 0.3, 0.25)), np.array((0.85, 0.85, 0.82))


@dataclass
class House:
    """The occupancy grid (rows = y, columns = x), which room each free cell is in, each
    room's tint, and each landmark's kind and centre (m)."""

    seed: int
    grid: np.ndarray            # (rows, cols) int8: FREE, WALL or 2 + landmark
    rooms: np.ndarray           # (rows, cols) int: room index, -1 in walls and doors
    tints: list[str]
    kinds: list[str]            # landmark k's kind
    centres: np.ndarray         # (landmarks, 2) x, y in m
    colours: np.ndarray         # (2 + landmarks, 3) wall colour per room is in `tints`

    @property
    def shape(self) -> tuple[int, int]:
        return self.grid.shape

    def free(self, x: float, y: float, radius: float = 0.1) -> bool:
        """Whether a body of `radius` m at (x, y) m touches nothing."""
        for dx in (-radius, radius):
            for dy in (-radius, radius):
                r, c = int((y + dy) // CELL), int((x + dx) // CELL)
                if not (0 <= r < self.shape[0] and 0 <= c < self.shape[1]) \
                        or self.grid[r, c] != FREE:
                    return False
        return True

    def room_at(self, x: float, y: float) -> int:
        r, c = int(y // CELL), int(x // CELL)
        return int(self.rooms[r, c]) if 0 <= r < self.shape[0] and 0 <= c < self.shape[1] \
            else -1


def make_house(seed: int, rooms: tuple[int, int] | None = None,
               landmarks_per_room: int = 2) -> House:
    """A house of `rooms` (rows, cols; default 1 x 2, 1 x 3 or 2 x 2 by seed) from `seed`."""
    rng = np.random.default_rng(seed)
    rows, cols = rooms or ((1, 2), (1, 3), (2, 2))[seed % 3]
    side = ROOM + 1
    grid = np.full((rows * side + 1, cols * side + 1), WALL, np.int8)
    room_of = np.full(grid.shape, -1, int)
    for i in range(rows):
        for j in range(cols):
            grid[i * side + 1:(i + 1) * side, j * side + 1:(j + 1) * side] = FREE
            room_of[i * side + 1:(i + 1) * side, j * side + 1:(j + 1) * side] = i * cols + j
    for a, b in _doors(rows, cols, rng):
        (i, j), (k, l) = divmod(a, cols), divmod(b, cols)
        at = rng.integers(2, ROOM - 5)  # door start along the wall, 4 cells wide
        if i == k:   # rooms side by side: a vertical wall at column (max(j, l)) * side
            c = max(j, l) * side
            grid[i * side + 1 + at:i * side + 5 + at, c] = FREE
        else:
            r = max(i, k) * side
            grid[r, j * side + 1 + at:j * side + 5 + at] = FREE
    kinds = list(rng.choice(list(KINDS), rows * cols * landmarks_per_room, replace=False))
    centres = []
    for k, _ in enumerate(kinds):
        room = k // landmarks_per_room
        centres.append(_place(grid, room_of, room, len(centres), rng))
    tints = list(rng.choice(list(TINTS), rows * cols, replace=rows * cols > len(TINTS)))
    colours = np.array([(0, 0, 0), (0, 0, 0)] + [KINDS[k] for k in kinds], np.float32)
    return House(seed, grid, room_of, tints, kinds, np.array(centres), colours)


def _doors(rows: int, cols: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """A random spanning tree of the room grid plus one extra door, as room-index pairs."""
    pairs = [(i * cols + j, i * cols + j + 1) for i in range(rows) for j in range(cols - 1)]
    pairs += [(i * cols + j, (i + 1) * cols + j) for i in range(rows - 1) for j in range(cols)]
    order = rng.permutation(len(pairs))
    parent = list(range(rows * cols))

    def root(a: int) -> int:
        while parent[a] != a:
            a = parent[a]
        return a

    tree, spare = [], []
    for k in order:
        a, b = pairs[k]
        if root(a) != root(b):
            parent[root(a)] = root(b)
            tree.append(pairs[k])
        else:
            spare.append(pairs[k])
    return tree + spare[:1]


def _place(grid: np.ndarray, room_of: np.ndarray, room: int, k: int,
           rng: np.random.Generator) -> tuple[float, float]:
    """Put landmark `k` (2 x 2 cells) in `room`, off the doorways, 2 cells from others."""
    cells = np.argwhere(room_of == room)
    top, left = cells.min(0)
    for _ in range(200):
        r = top + rng.integers(1, ROOM - 3)
        c = left + rng.integers(1, ROOM - 3)
        if (grid[r - 2:r + 4, c - 2:c + 4] <= WALL).all() and \
                (grid[r - 1:r + 3, c - 1:c + 3] == FREE).all():
            grid[r:r + 2, c:c + 2] = 2 + k
            return ((c + 1) * CELL, (r + 1) * CELL)
    raise RuntimeError(f"no room for landmark {k} in room {room}")


def render(house: House, x: float, y: float, heading: float, size: int = SIZE
           ) -> tuple[np.ndarray, np.ndarray]:
    """The view from (x, y) m facing `heading` (rad, 0 = +x, counter-clockwise):
    RGB (size, size, 3) uint8 and depth (size, size) float32 in m (along the view axis)."""
    angles, focal = _rays(heading, size)
    hit, dist, side = _cast(house, x, y, angles)
    perp = dist * np.cos(angles - heading)                            # (W,) m
    rows = np.arange(size)[:, None] + 0.5 - size / 2                  # (H, 1) from centre
    half = WALL_HEIGHT / 2
    plane = np.where(np.abs(rows) > 1e-6, focal * half / np.maximum(np.abs(rows), 1e-6),
                     MAX_DEPTH)                                       # floor/ceiling depth
    on_wall = plane >= perp[None, :]                                  # (H, W)
    depth = np.minimum(np.where(on_wall, perp[None, :], plane), MAX_DEPTH)
    rooms = _rooms_hit(house, x, y, angles, dist)
    tint = np.array([TINTS[house.tints[r]] if r >= 0 else TINTS["grey"] for r in rooms])
    wall_rgb = np.where((hit == WALL)[:, None], tint,
                        house.colours[np.clip(hit, 0, len(house.colours) - 1)])
    wall_rgb = wall_rgb * np.where(side, 0.75, 1.0)[:, None]
    flat = np.where(rows > 0, 1, 0)[..., None] * FLOOR + np.where(rows > 0, 0, 1)[..., None] \
        * CEILING                                                     # (H, 1, 3)
    rgb = np.where(on_wall[..., None], wall_rgb[None], flat)
    rgb = rgb / (1 + 0.12 * depth[..., None])
    return (np.clip(rgb, 0, 1) * 255).round().astype(np.uint8), depth.astype(np.float32)


def seen(house: House, x: float, y: float, heading: float, size: int = SIZE) -> list[str]:
    """What each image column shows, by name: a landmark's kind or the tint of the room
    whose wall it is (the semantic encoder's pretraining labels)."""
    angles, _ = _rays(heading, size)
    hit, dist, _ = _cast(house, x, y, angles)
    rooms = _rooms_hit(house, x, y, angles, dist)
    return [house.kinds[h - 2] if h >= 2 else house.tints[r] if r >= 0 else "grey"
            for h, r in zip(hit, rooms)]


def _rays(heading: float, size: int) -> tuple[np.ndarray, float]:
    """Each column's ray angle, left to right, and the focal length in pixels."""
    focal = (size / 2) / np.tan(FOV / 2)
    return heading + np.arctan((size / 2 - (np.arange(size) + 0.5)) / focal), focal


def _cast(house: House, x: float, y: float, angles: np.ndarray, step: float = 0.02
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """March every ray to the first occupied cell: its grid value, the distance (m), and
    whether the face hit looks along x (shaded darker)."""
    t = np.arange(step, MAX_DEPTH, step)                              # (S,)
    px = x + np.cos(angles)[:, None] * t                              # (W, S)
    py = y + np.sin(angles)[:, None] * t
    r = np.clip((py // CELL).astype(int), 0, house.shape[0] - 1)
    c = np.clip((px // CELL).astype(int), 0, house.shape[1] - 1)
    solid = house.grid[r, c] != FREE
    first = np.where(solid.any(1), solid.argmax(1), len(t) - 1)       # (W,)
    w = np.arange(len(angles))
    prev = np.maximum(first - 1, 0)
    side = c[w, first] != c[w, prev]
    return house.grid[r[w, first], c[w, first]], t[first], side


def _rooms_hit(house: House, x: float, y: float, angles: np.ndarray, dist: np.ndarray
               ) -> list[int]:
    """The room each ray was in just before it hit (whose wall it sees)."""
    back = np.maximum(dist - 0.1, 0)
    return [house.room_at(x + np.cos(a) * d, y + np.sin(a) * d) for a, d in zip(angles, back)]
