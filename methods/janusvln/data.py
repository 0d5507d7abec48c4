"""VLN-CE R2R episode files (gzipped JSON), read into this package's episodes, and written.

The format (Krantz et al. 2020): {"episodes": [{"episode_id", "scene_id", "start_position"
[x, y, z], "start_rotation" [x, y, z, w], "goals": [{"position", "radius"}],
"instruction": {"instruction_text"}, "reference_path": [[x, y, z], ...]}]}, Habitat's axes:
y up, the agent facing -z at rotation 0. Only scenes this package renders can be driven:
its procedural houses, scene ids `edgert/house-SEED`. A Matterport3D scene needs
Habitat-Sim and the MP3D meshes; such an episode gets an error that says so.
"""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np

from edgert.runtime.plugin import Data, DataError
from edgert.methods.janusvln.episodes import Episode, distance_field, follow
from edgert.methods.janusvln.simulate import make_house

SCENE = re.compile(r"^edgert/house-(\d+)$")
FIELDS = ("episode_id", "scene_id", "start_position", "start_rotation", "goals", "instruction",
          "reference_path")


def scene_id(house: int) -> str:
    return f"edgert/house-{house}"


def to_habitat(x: float, y: float) -> list[float]:
    return [float(x), 0.0, float(-y)]


def heading_of(rotation: list[float]) -> float:
    """Habitat's yaw quaternion [x, y, z, w] -> heading (rad, 0 = +x, counter-clockwise)."""
    return float(np.pi / 2 + 2 * np.arctan2(rotation[1], rotation[3])) % (2 * np.pi)


def rotation_of(heading: float) -> list[float]:
    yaw = heading - np.pi / 2
    return [0.0, float(np.sin(yaw / 2)), 0.0, float(np.cos(yaw / 2))]


def write_r2r(eps: list[Episode], path: Path) -> Path:
    """Episodes as a VLN-CE R2R file (gzipped when `path` ends in .gz)."""
    body = {"episodes": [{
        "episode_id": e.episode_id or str(i), "trajectory_id": i,
        "scene_id": scene_id(e.house), "start_position": to_habitat(*e.start[:2]),
        "start_rotation": rotation_of(e.start[2]),
        "goals": [{"position": to_habitat(*e.goal), "radius": 1.0}],
        "instruction": {"instruction_text": e.instruction},
        "reference_path": [to_habitat(*p) for p in e.path]} for i, e in enumerate(eps)]}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(body).encode()
    path.write_bytes(gzip.compress(text) if path.suffix == ".gz" else text)
    return path


def read_r2r(path: Path) -> list[Episode]:
    """A VLN-CE R2R episode file -> episodes in this package's houses (the expert's actions
    recomputed in the house); DataError naming the file, episode and field at fault."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        body = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    except (OSError, ValueError, EOFError) as exc:
        raise DataError(f"{path}: not a readable R2R episode file (gzipped JSON): {exc}") \
            from None
    if not isinstance(body, dict) or not isinstance(body.get("episodes"), list):
        raise DataError(f"{path}: no 'episodes' list at the top level (VLN-CE R2R format)")
    return [_episode(e, path, i) for i, e in enumerate(body["episodes"])]


def _episode(raw: dict, path: Path, index: int) -> Episode:
    where = f"{path}: episode {raw.get('episode_id', index)!r}"
    missing = [f for f in FIELDS if f not in raw]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing}")
    match = SCENE.match(str(raw["scene_id"]))
    if not match:
        raise DataError(f"{where}: scene {raw['scene_id']!r} is not available here: edgert "
                        "renders its own procedural houses (scene ids 'edgert/house-SEED'); "
                        "Matterport3D scenes need Habitat-Sim and the MP3D meshes")
    try:
        x, _, z = map(float, raw["start_position"])
        gx, _, gz = map(float, raw["goals"][0]["position"])
        heading = heading_of([float(v) for v in raw["start_rotation"]])
        text = str(raw["instruction"]["instruction_text"])
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        raise DataError(f"{where}: bad start_position, start_rotation, goals or instruction: "
                        f"{exc}") from None
    house = make_house(int(match.group(1)))
    start, goal = (x, -z, heading), (gx, -gz)
    if not house.free(x, -z):
        raise DataError(f"{where}: start_position {raw['start_position']} is inside a wall of "
                        f"{raw['scene_id']}")
    try:
        actions, positions, _ = follow(house, distance_field(house, goal), start)
    except ValueError as exc:
        raise DataError(f"{where}: goal {raw['goals'][0]['position']}: {exc}") from None
    return Episode(house.seed, start, goal, text, actions, positions, str(raw["episode_id"]))


def read(data: Data) -> list[Episode]:
    """`--data FILE.json.gz ... [--format r2r]`: VLN-CE R2R episode files."""
    if data.format not in (None, "r2r"):
        raise DataError(f"--format {data.format!r} is not one JanusVLN reads: ['r2r']")
    return [e for path in data.paths for e in read_r2r(Path(path))]
