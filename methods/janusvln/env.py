"""The houses as a `gymnasium.Env`: what the agent sees, the four actions, success at STOP.

Observations are the camera's RGB (H, W, 3) uint8, its depth (H, W) float32 m, and the pose
(x, y m, heading rad); the policy uses RGB only, depth and pose train the geometric encoder.
The reward is the decrease of geodesic distance to the goal, plus 10 for a successful STOP.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgert.methods.janusvln.episodes import (ACTIONS, MAX_STEPS, STOP, SUCCESS_M, Episode,
                                              distance_field, expert_action, field_at,
                                              make_episode, move)
from edgert.methods.janusvln.simulate import MAX_DEPTH, SIZE, House, make_house, render


class NavEnv(gym.Env):
    """One episode at a time: `reset(options={"episode": Episode})` or a seeded random one."""

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, houses: list[int] | None = None, max_steps: int = MAX_STEPS):
        self.houses = houses or [0]
        self.max_steps = max_steps
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.observation_space = spaces.Dict({
            "rgb": spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8),
            "depth": spaces.Box(0, MAX_DEPTH, (SIZE, SIZE), np.float32),
            "pose": spaces.Box(-np.inf, np.inf, (3,), np.float32)})
        self._houses: dict[int, House] = {}

    def house(self, seed: int) -> House:
        if seed not in self._houses:
            self._houses[seed] = make_house(seed)
        return self._houses[seed]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        episode = (options or {}).get("episode")
        if episode is None:
            house = self.house(int(self.np_random.choice(self.houses)))
            episode = make_episode(house, self.np_random)
        self.episode: Episode = episode
        self.map = self.house(episode.house)
        self.field = distance_field(self.map, episode.goal)
        self.pose = tuple(map(float, episode.start))
        self.steps = 0
        self.path = [self.pose[:2]]
        return self._observe(), {"instruction": episode.instruction,
                                 "distance": self.distance()}

    def step(self, action: int):
        before = self.distance()
        self.steps += 1
        if action == STOP:
            success = self.success()
            return self._observe(), float(10 * success), True, False, self._info(success)
        self.pose = move(self.map, self.pose, int(action))
        self.path.append(self.pose[:2])
        reward = before - self.distance() if np.isfinite(before) else 0.0
        return (self._observe(), float(reward), False, self.steps >= self.max_steps,
                self._info(False))

    def distance(self) -> float:
        """Geodesic distance to the goal region (m)."""
        return field_at(self.field, self.pose[0], self.pose[1])

    def success(self) -> bool:
        return bool(np.hypot(self.pose[0] - self.episode.goal[0],
                             self.pose[1] - self.episode.goal[1]) <= SUCCESS_M)

    def expert(self) -> int:
        """The shortest-path action from here (what DAgger labels a visited state with)."""
        return expert_action(self.map, self.field, self.pose)

    def render(self) -> np.ndarray:
        return render(self.map, *self.pose)[0]

    def _observe(self) -> dict:
        rgb, depth = render(self.map, *self.pose)
        return {"rgb": rgb, "depth": depth, "pose": np.array(self.pose, np.float32)}

    def _info(self, success: bool) -> dict:
        return {"success": success, "distance": self.distance(), "steps": self.steps}
