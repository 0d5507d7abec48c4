"""`edgert evaluate janusvln`: every variant trained alike, navigating houses none of them
saw (val-unseen, split by house), and what each costs as an episode grows.

Navigation: SR, SPL, NE, OS, nDTW over the unseen episodes, and SR/SPL on the longer and
shorter half (by the expert's number of steps), where sinks matter. Cost: a walk of up to
1000 steps, each variant's bytes held between steps and step latency (p50, p99 over the
ten steps before each length, three passes pooled), JanusVLN in torch eager and in ONNX
Runtime (its exported step graph) in the same run; re-encoding variants are timed up to
`reencode_max` steps (their cost grows with every step; far beyond is minutes a step).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from edgert.runtime.plugin import Data
from edgert.methods.janusvln import train as training
from edgert.methods.janusvln.baselines import VARIANTS
from edgert.methods.janusvln.data import read
from edgert.methods.janusvln.env import NavEnv
from edgert.methods.janusvln.episodes import FORWARD, LEFT, RIGHT, Episode, episodes, split
from edgert.methods.janusvln.export import export_agent
from edgert.methods.janusvln.metrics import episode_metrics, mean_metrics
from edgert.methods.janusvln.model import Agent
from edgert.methods.janusvln.navigate import Navigator
from edgert.methods.janusvln.node import BundleNavigator
from edgert.export.bundle import Bundle
from edgert.runtime.progress import progress_bar

EXAMPLES = 4   # episodes per variant whose paths the JSON keeps (figures draw them)


class Config(training.Config):
    lengths: tuple[int, ...] = (10, 25, 50, 100, 250, 500, 1000)
    reencode_max: int = 100
    passes: int = 3

    @classmethod
    def quick(cls) -> "Config":
        """Five agents in under 10 minutes: a few hundred steps each, a smoke test of the
        comparison rather than its result."""
        return cls(houses=24, unseen=8, episodes_per_house=8, eval_per_house=5,
                   semantic_steps=300, geometry_steps=100, policy_steps=250, dagger_rounds=1,
                   dagger_episodes=24, dagger_steps=60, lengths=(10, 50, 100, 250, 1000),
                   reencode_max=50, passes=2)


def navigate(navigator, env: NavEnv, episode: Episode) -> dict:
    """One episode driven by `navigator`: its metrics, step times and the bytes it held."""
    obs, _ = env.reset(options={"episode": episode})
    navigator.reset(episode.instruction)
    stopped, seconds = False, []
    for _ in range(2 * len(episode.actions) + 20):
        enter = time.perf_counter()
        action = navigator.act(obs["rgb"])
        seconds.append(time.perf_counter() - enter)
        obs, _, stopped, truncated, _ = env.step(action)
        if stopped or truncated:
            break
    path = np.array(env.path)
    return {**episode_metrics(path, episode.path, episode.goal, stopped), "seconds": seconds,
            "bytes": navigator.state_bytes, "path": path}


def summary(rows: list[dict], eps: list[Episode]) -> dict:
    """Mean metrics, the long and short halves, step latency and memory."""
    keys = ("sr", "spl", "ne", "os", "ndtw")
    median = np.median([len(e.actions) for e in eps])
    long = [r for r, e in zip(rows, eps) if len(e.actions) > median]
    short = [r for r, e in zip(rows, eps) if len(e.actions) <= median]
    seconds = np.concatenate([r["seconds"] for r in rows]) * 1e3
    return {**mean_metrics([{k: r[k] for k in keys} for r in rows]),
            **{f"{k}_long": v for k, v in mean_metrics([{k: r[k] for k in ("sr", "spl")}
                                                         for r in long]).items()},
            **{f"{k}_short": v for k, v in mean_metrics([{k: r[k] for k in ("sr", "spl")}
                                                          for r in short]).items()},
            "step_p50_ms": float(np.percentile(seconds, 50)),
            "step_p99_ms": float(np.percentile(seconds, 99)),
            "memory_bytes_max": int(max(r["bytes"] for r in rows)),
            "episodes": len(rows), "long_from_steps": float(median)}


def walk(houses: list[int], steps: int, seed: int) -> list[np.ndarray]:
    """Frames of a long wander (forward unless blocked, random turns) for the cost curves."""
    env = NavEnv(houses, max_steps=steps + 1)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    frames = []
    for _ in range(steps):
        frames.append(obs["rgb"])
        before = env.pose
        action = FORWARD if rng.random() < 0.7 else int(rng.choice([LEFT, RIGHT]))
        obs, *_ = env.step(action)
        if action == FORWARD and env.pose == before:
            obs, *_ = env.step(LEFT)
    return frames


def timed(navigator, frames: list[np.ndarray], lengths: tuple[int, ...], passes: int
          ) -> dict:
    """Step latency (p50, p99 over the ten steps before each length, passes pooled) and
    bytes held at each length, running every step."""
    times = np.zeros((passes, max(lengths)))
    held = {}
    for p in range(passes):
        navigator.reset("walk past the sofa and stop by the lamp")
        for i, frame in enumerate(frames[:max(lengths)]):
            enter = time.perf_counter()
            navigator.act(frame)
            times[p, i] = time.perf_counter() - enter
            if i + 1 in lengths:
                held[i + 1] = navigator.state_bytes
    window = [times[:, max(0, n - 10):n].ravel() * 1e3 for n in lengths]
    return {"steps": list(lengths), "state_bytes": [held[n] for n in lengths],
            "p50_ms": [float(np.percentile(w, 50)) for w in window],
            "p99_ms": [float(np.percentile(w, 99)) for w in window]}


def timed_reencoding(agent: Agent, frames: list[np.ndarray], lengths: tuple[int, ...],
                     limit: int, passes: int) -> dict:
    """A re-encoding variant: bytes at every length (the frames it stores), latency of
    `passes` steps at each length up to `limit`."""
    navigator = Navigator(agent)
    out = {"steps": [], "state_bytes": [], "p50_ms": [], "p99_ms": []}
    for n in lengths:
        navigator.reset("walk past the sofa and stop by the lamp")
        navigator.frames = list(frames[:n - 1])
        out["steps"].append(n)
        out["state_bytes"].append(sum(f.nbytes for f in navigator.frames) + frames[0].nbytes)
        if n > limit:
            continue
        seconds = []
        for _ in range(passes):
            navigator.frames = list(frames[:n - 1])
            enter = time.perf_counter()
            navigator.act(frames[n - 1])
            seconds.append(time.perf_counter() - enter)
        out["p50_ms"].append(float(np.percentile(seconds, 50)) * 1e3)
        out["p99_ms"].append(float(np.percentile(seconds, 99)) * 1e3)
    return out


def kv_bytes(agent: Agent) -> int:
    """Bytes of one frame's keys/values in both encoders (float32)."""
    encoders = [agent.semantic] + ([agent.geometry.encoder] if agent.geometry else [])
    return sum(len(e.blocks) * 2 * e.tokens * e.width * 4 for e in encoders)


def scaling(agents: dict[str, Agent], cfg: Config, bundle: Bundle) -> dict:
    """Bytes and step latency against episode length: JanusVLN torch and ONNX Runtime, and
    the variants that store or re-encode history."""
    frames = walk(split(cfg.houses, cfg.unseen)[1], max(cfg.lengths), cfg.seed)
    torch_ = timed(Navigator(agents["janusvln"]), frames, cfg.lengths, cfg.passes)
    ort = BundleNavigator(bundle)
    try:
        onnx = timed(ort, frames, cfg.lengths, cfg.passes)
    finally:
        ort.close()
    curves = {"janusvln": torch_, "janusvln_ort": onnx}
    for name in ("full_history", "explicit_memory"):
        if name in agents:
            curves[name] = timed_reencoding(agents[name], frames, cfg.lengths,
                                            cfg.reencode_max, cfg.passes)
    points = [{"variant": name, "step": n, "state_bytes": c["state_bytes"][i],
               "p50_ms": c["p50_ms"][i] if i < len(c["p50_ms"]) else None,
               "p99_ms": c["p99_ms"][i] if i < len(c["p99_ms"]) else None}
              for name, c in curves.items() for i, n in enumerate(c["steps"])]
    growth = {name: {"p99_ms_first": curves[name]["p99_ms"][0],
                     "p99_ms_last": curves[name]["p99_ms"][-1],
                     "p99_growth": curves[name]["p99_ms"][-1] / curves[name]["p99_ms"][0] - 1,
                     "bytes_growth": curves[name]["state_bytes"][-1]
                     / curves[name]["state_bytes"][0] - 1}
              for name in ("janusvln", "janusvln_ort")}
    return {"curves": curves, "points": points, "growth": growth,
            "kv_bytes_per_frame": kv_bytes(agents["janusvln"])}


def evaluate(quick: bool = False, data: Data | None = None, seed: int = 0,
             config: Config | None = None) -> dict:
    """Train every variant on the simulated training houses and drive the unseen ones (or
    the episodes of `data`, VLN-CE R2R files)."""
    cfg = config or (Config.quick() if quick else Config()).model_copy(update={"seed": seed})
    variants = VARIANTS
    torch.manual_seed(seed)
    started = time.time()
    _, unseen = split(cfg.houses, cfg.unseen)
    eps = read(data) if data else episodes(unseen, cfg.eval_per_house, seed + 99)
    env = NavEnv(unseen)
    with progress_bar() as progress:
        _, agents = training.train_all(cfg, variants, progress)
        trained = time.time() - started
        task = progress.add_task("JanusVLN: unseen houses", total=len(variants) * len(eps))
        rows = {}
        for name in variants:
            progress.update(task, description=f"JanusVLN: {name} in {len(unseen)} unseen "
                            "houses")
            navigator = Navigator(agents[name])
            rows[name] = []
            for e in eps:
                rows[name].append(navigate(navigator, env, e))
                progress.advance(task)
        progress.add_task("JanusVLN: bytes and latency against episode length", total=None)
        with tempfile.TemporaryDirectory() as tmp:
            bundle = export_agent(agents["janusvln"], cfg, Path(tmp) / "bundle")
            cost = scaling(agents, cfg, bundle)
    return {"method": "janusvln", "config": cfg.model_dump(),
            "results": {name: summary(rows[name], eps) for name in variants},
            "scaling": cost,
            "examples": {name: [{"house": e.house, "instruction": e.instruction,
                                 "expert": e.path.round(3).tolist(),
                                 "path": r["path"].round(3).tolist(), "sr": r["sr"]}
                                for e, r in zip(eps[:EXAMPLES], rows[name])]
                         for name in variants},
            "unseen_houses": unseen, "train_seconds": trained,
            "seconds": time.time() - started}
