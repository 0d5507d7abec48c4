"""`edgert demo nav`: a simulated robot, in its own process, walks houses it never trained in,
asking `pipelines/nav.yaml` what to do at every frame.

The robot renders its camera, sends each frame with the episode's instruction over ZeroMQ
REQ, executes the action it gets back, and stops on STOP (or after twice the expert's steps
plus 20). Metrics: SR, SPL, NE, OS, nDTW over the episodes it finished, the service's step
time and the memory's bytes as episodes grow; figures: each episode's top-down map, the
path taken against the expert's.
"""
from __future__ import annotations

import multiprocessing as mp
import queue
import threading
import time
import uuid
from pathlib import Path

import numpy as np

from edgert import pipelines
from edgert.methods.janusvln.env import NavEnv
from edgert.methods.janusvln.episodes import ACTIONS, episodes, split
from edgert.methods.janusvln.export import cached_bundle
from edgert.methods.janusvln.figures import maps
from edgert.methods.janusvln.metrics import episode_metrics
from edgert.methods.janusvln.node import request
from edgert.runtime.demo import run_demo
from edgert.runtime.json_request import read
from edgert.runtime.pipeline import Pipeline
from edgert.streams import local_clock
from edgert.streams.zmq_link import Requester, free_endpoint, listening

HOUSES = 6          # unseen houses the demo walks, one episode each in turn
PERIOD_S = 0.05     # the robot's frame period (20 Hz camera)


def robot(endpoint: str, seconds: float, seed: int, out: mp.Queue) -> None:
    """The robot's process: episodes one after another for `seconds`; on `out`, the time
    of the first action received, each finished episode's record, then None."""
    houses = split(0, HOUSES)[1]
    env = NavEnv(houses)
    end = local_clock() + seconds
    with Requester(endpoint) as req:
        for k, episode in enumerate(episodes(houses, 4, seed)):
            name = f"{episode.episode_id}-{k}"
            obs, _ = env.reset(options={"episode": episode})
            replies, stopped = [], False
            for step in range(2 * len(episode.actions) + 20):
                if local_clock() > end:
                    break
                sent = local_clock()
                body = read(req.request(request(name, obs["rgb"], episode.instruction,
                                                seq=step), 30.0))
                if "error" in body:
                    out.put({"error": body["error"]})
                    return
                replies.append({**body, "rtt_ms": (local_clock() - sent) * 1e3})
                if k == 0 and step == 0:
                    out.put({"first_reply": time.time()})
                obs, _, stopped, truncated, _ = env.step(ACTIONS.index(body["action"]))
                if stopped or truncated:
                    break
                time.sleep(max(0.0, PERIOD_S - (local_clock() - sent)))
            if local_clock() > end and not stopped:
                break
            path = np.array(env.path)
            out.put({"house": episode.house, "instruction": episode.instruction,
                     "expert": episode.path.tolist(), "path": path.tolist(),
                     "metrics": episode_metrics(path, episode.path, episode.goal, stopped),
                     "step_ms": [r["step_ms"] for r in replies],
                     "rtt_ms": [r["rtt_ms"] for r in replies],
                     "memory_bytes": [r["memory_bytes"] for r in replies]})
    out.put(None)


class Robot:
    """Runs `robot` in its own process and collects its episodes. Also a feed for
    `edgert bench` (open, ready, start, wait, stop)."""

    def __init__(self, endpoint: str, seconds: float = float("inf"), seed: int = 0):
        self.endpoint, self.seconds, self.seed = endpoint, seconds, seed
        self.episodes: list[dict] = []
        self.first_at: float | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.process: mp.Process | None = None

    def run(self) -> None:
        ctx = mp.get_context("spawn")
        results = ctx.Queue()
        self.process = ctx.Process(target=robot, args=(self.endpoint, self.seconds, self.seed,
                                                      results), daemon=True)
        self.process.start()
        while True:
            try:
                record = results.get(timeout=1.0)
            except queue.Empty:
                if not self.process.is_alive():
                    self.error = f"the robot's process ended (exit code {self.process.exitcode})"
                    return
                continue
            if record is None or "error" in record:
                self.error = record and record["error"]
                return
            if "first_reply" in record:
                self.first_at = record["first_reply"]
            else:
                self.episodes.append(record)

    def open(self) -> list:
        return []

    def ready(self, timeout: float) -> bool:
        return listening(self.endpoint, timeout)

    def start(self) -> None:
        self.thread.start()

    def wait(self) -> None:
        self.thread.join()

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
        if self.thread.is_alive():
            self.thread.join(5)


def metrics(episodes: list[dict]) -> dict:
    if not episodes:
        return {"episodes": 0}
    keys = episodes[0]["metrics"]
    steps = [m for e in episodes for m in e["step_ms"]]
    memory = [m for e in episodes for m in e["memory_bytes"]]
    return {"episodes": len(episodes),
            **{k: float(np.mean([e["metrics"][k] for e in episodes])) for k in keys},
            "steps": len(steps),
            "step_p50_ms": float(np.percentile(steps, 50)),
            "step_p99_ms": float(np.percentile(steps, 99)),
            "robot_rtt_p99_ms": float(np.percentile([m for e in episodes
                                                     for m in e["rtt_ms"]], 99)),
            "memory_bytes_min": int(min(memory)), "memory_bytes_max": int(max(memory)),
            "longest_episode_steps": max(len(e["step_ms"]) for e in episodes)}


def overrides(service: str, log: str, bundle: Path | None = None) -> list[str]:
    return [f"frames.endpoint={service}", f"reply.endpoint={service}", f"log.endpoint={log}",
            f"agent.bundle={bundle or cached_bundle()}"]


def sources(name: str, seconds: float) -> tuple[list[Robot], list[str]]:
    """A robot walking for `seconds`, and the pipeline's overrides (for `bench`)."""
    service, log = free_endpoint(), free_endpoint()
    return [Robot(service, seconds)], overrides(service, log)


def nav(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 60); the maps go to `out/NAME.png`."""
    duration = duration or 60.0
    service, log = free_endpoint(), free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("nav"), overrides(service, log))
    client = Robot(service, duration)

    def status() -> str:
        done = client.episodes
        return (f"episodes finished: {len(done)}; success "
                f"{np.mean([e['metrics']['sr'] for e in done]) if done else 0:.0%}")

    report = run_demo(pipe, None, [client], run, duration, status=status)
    report["metrics"] = metrics(client.episodes)
    if client.error:
        report["errors"] = [client.error]
    name = f"edgert-nav-{uuid.uuid4().hex[:6]}"
    report["figures"] = [str(p) for p in maps(client.episodes, out / f"{name}.png")]
    return report
