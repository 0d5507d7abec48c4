"""Navigation episodes in the procedural houses: start, goal, the shortest-path expert and the
templated route instruction it is described by.

The expert follows the geodesic distance field to the goal (skimage's minimum-cost paths
over the grid, cells beside walls dearer so paths keep off them): of the twelve headings it
takes the one whose next two steps lower the distance most, turns to it, walks, and stops
once inside the goal's 0.75 m. The instruction names what that path does, in order: turns,
rooms entered, landmarks passed, and the landmark it stops by.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage
from skimage.graph import MCP_Geometric

from edgert.methods.janusvln.simulate import CELL, FREE, KINDS, TINTS, House, make_house

ACTIONS = ("STOP", "FORWARD", "TURN_LEFT", "TURN_RIGHT")
STOP, FORWARD, LEFT, RIGHT = range(4)
TURN = np.pi / 6       # 30 degrees
STEP = CELL            # 0.25 m
SUCCESS_M = 1.0        # success: STOP within this distance of the goal
STOP_M = 0.75          # the expert stops inside this
MAX_STEPS = 150
WORDS = ("<pad>", "<unk>", "turn", "left", "right", "around", "walk", "past", "the", "go",
         "into", "room", "stop", "by", "then", "and", *KINDS, *TINTS)
INDEX = {w: i for i, w in enumerate(WORDS)}
MAX_WORDS = 40


@dataclass
class Episode:
    """One start-to-goal task; `actions` and `path` are the expert's."""

    house: int                       # the house's seed
    start: tuple[float, float, float]  # x, y (m), heading (rad)
    goal: tuple[float, float]        # m
    instruction: str
    actions: list[int] = field(default_factory=list)
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (steps + 1, 2) m
    episode_id: str = ""


def distance_field(house: House, goal: tuple[float, float]) -> np.ndarray:
    """Geodesic distance (m) from every cell to the goal region; inf where unreachable."""
    free = house.grid == FREE
    near_wall = free & ~ndimage.binary_erosion(free, np.ones((3, 3), bool), border_value=0)
    costs = np.where(free, np.where(near_wall, 3.0, 1.0), np.inf)
    rr, cc = np.nonzero(free)
    centres = np.stack([(cc + 0.5) * CELL, (rr + 0.5) * CELL], 1)
    inside = np.linalg.norm(centres - np.asarray(goal), axis=1) <= STOP_M
    if not inside.any():
        raise ValueError(f"house {house.seed}: no free cell within {STOP_M} m of goal {goal}")
    cumulative, _ = MCP_Geometric(costs).find_costs(np.stack([rr[inside], cc[inside]], 1))
    return cumulative * CELL


def move(house: House, pose: tuple[float, float, float], action: int
         ) -> tuple[float, float, float]:
    """The pose after `action`; a FORWARD into a wall leaves the agent where it was."""
    x, y, h = pose
    if action == LEFT:
        return x, y, (h + TURN) % (2 * np.pi)
    if action == RIGHT:
        return x, y, (h - TURN) % (2 * np.pi)
    if action == FORWARD:
        nx, ny = x + STEP * np.cos(h), y + STEP * np.sin(h)
        return (nx, ny, h) if house.free(nx, ny) else (x, y, h)
    return pose


def field_at(field_m: np.ndarray, x: float, y: float) -> float:
    r, c = int(y // CELL), int(x // CELL)
    inside = 0 <= r < field_m.shape[0] and 0 <= c < field_m.shape[1]
    return float(field_m[r, c]) if inside else np.inf


def expert_action(house: House, field_m: np.ndarray, pose: tuple[float, float, float]) -> int:
    """The shortest-path follower's action at `pose`."""
    x, y, h = pose
    if field_at(field_m, x, y) == 0:
        return STOP
    current = int(round(h / TURN)) % 12
    scores = []
    for k in range(12):
        p = (x, y, k * TURN)
        for _ in range(2):
            p = move(house, p, FORWARD)
        scores.append(field_at(field_m, p[0], p[1]) + (0 if k == current else 1e-3))
    best = int(np.argmin(scores))
    if best == current:
        return FORWARD
    return LEFT if (best - current) % 12 <= 6 else RIGHT


def follow(house: House, field_m: np.ndarray, start: tuple[float, float, float]
           ) -> tuple[list[int], np.ndarray, list[tuple[float, float, float]]]:
    """The expert's actions, positions (steps + 1, 2) and poses from `start` to STOP."""
    pose, actions, poses = start, [], [start]
    for _ in range(MAX_STEPS):
        action = expert_action(house, field_m, pose)
        actions.append(action)
        if action == STOP:
            break
        pose = move(house, pose, action)
        poses.append(pose)
    return actions, np.array([p[:2] for p in poses]), poses


def describe(house: House, actions: list[int], poses: list, goal_landmark: int) -> str:
    """The templated instruction for an expert path: turns, rooms, landmarks, the stop."""
    events: list[tuple[int, str]] = []
    turn, since = 0, 0
    for i, a in enumerate(actions + [STOP]):
        if a in (LEFT, RIGHT):
            turn += 1 if a == LEFT else -1
            continue
        if abs(turn) >= 2:
            events.append((since, "turn around" if abs(turn) >= 5 else
                           f"turn {'left' if turn > 0 else 'right'}"))
        turn, since = 0, i + 1
    rooms = [house.room_at(p[0], p[1]) for p in poses]
    seen = {rooms[0]}
    for i, room in enumerate(rooms):
        if room >= 0 and room not in seen:
            seen.add(room)
            events.append((i, f"go into the {house.tints[room]} room"))
    xy = np.array([p[:2] for p in poses])
    for k, centre in enumerate(house.centres):
        d = np.linalg.norm(xy - centre, axis=1)
        if k != goal_landmark and d.min() < 1.3:
            events.append((int(d.argmin()), f"walk past the {house.kinds[k]}"))
    events.sort(key=lambda e: e[0])
    steps = [text for _, text in events][:5] + [f"stop by the {house.kinds[goal_landmark]}"]
    return ", then ".join(steps[:-1]) + (" and " if len(steps) > 1 else "") + steps[-1]


def make_episode(house: House, rng: np.random.Generator, index: int = 0,
                 min_m: float = 2.0, max_m: float = 9.0) -> Episode:
    """A random reachable start and a landmark in another room, with the expert's path."""
    free = np.argwhere(house.grid == FREE)
    for _ in range(500):
        r, c = free[rng.integers(len(free))]
        x, y = (c + 0.5) * CELL, (r + 0.5) * CELL
        room = house.room_at(x, y)
        if room < 0 or not house.free(x, y, 0.15):
            continue
        others = [k for k in range(len(house.kinds))
                  if house.room_at(*house.centres[k]) != room]
        k = int(rng.choice(others))
        goal = tuple(map(float, house.centres[k]))
        field_m = distance_field(house, goal)
        start = (x, y, float(rng.integers(12) * TURN))
        if not min_m <= field_at(field_m, x, y) <= max_m:
            continue
        actions, path, poses = follow(house, field_m, start)
        if actions[-1] != STOP:
            continue
        return Episode(house.seed, start, goal, describe(house, actions, poses, k), actions,
                       path, f"{house.seed}-{index}")
    raise RuntimeError(f"house {house.seed}: no episode found")


def episodes(houses: list[int], per_house: int, seed: int) -> list[Episode]:
    """`per_house` episodes in each house (seeded)."""
    rng = np.random.default_rng(seed)
    out = []
    for h in houses:
        house = make_house(h)
        out += [make_episode(house, rng, i) for i in range(per_house)]
    return out


def tokenize(text: str, length: int = MAX_WORDS) -> np.ndarray:
    """Instruction words -> (length,) int64 ids, padded; unknown words map to <unk>."""
    words = re.findall(r"[a-z]+", text.lower())[:length]
    ids = [INDEX.get(w, INDEX["<unk>"]) for w in words]
    return np.array(ids + [0] * (length - len(ids)), np.int64)


def split(houses: int, unseen: int) -> tuple[list[int], list[int]]:
    """House seeds for training and for val-unseen (never trained on)."""
    return list(range(houses)), list(range(10_000, 10_000 + unseen))
