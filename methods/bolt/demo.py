"""`edgert demo robot`: a simulated robot asks `pipelines/robot.yaml` questions about what its
camera sees, over ZeroMQ REQ, each with a budget, and checks the answers.

Frames and questions come from held-out episodes of the tabletop generator; budgets cycle
through tight, normal and generous, and one request in twenty has a 1-ms deadline, so the
report shows partial answers too. Metrics: accuracy (overall and against the first answer),
spend against budget, partial answers, and latency percentiles per action and end to end.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from edgert import pipelines
from edgert.methods.bolt import request
from edgert.methods.bolt.data import TARGET, generate
from edgert.methods.bolt.export import cached_bundle
from edgert.runtime.demo import run_demo
from edgert.runtime.pipeline import Pipeline
from edgert.streams import local_clock
from edgert.streams.wire import RemoteError
from edgert.streams.zmq_link import Requester, free_endpoint, listening

BUDGETS = (1.0, 2.0, 4.0)


class Robot:
    """Sends one question after another (REQ) for up to `seconds`, keeps the replies and their
    latency. Also a feed for `edgert bench` (open, ready, start, wait, stop)."""

    def __init__(self, endpoint: str, rate: float, seed: int = 0,
                 seconds: float = float("inf")):
        self.endpoint = endpoint
        self.period = 1.0 / rate
        self.seconds = seconds
        self.qa = generate(30, 4, 3, TARGET, 0.15, seed + 900)
        self.replies: list[tuple[str, float, dict, float]] = []
        self.errors: list[str] = []
        self.first_at: float | None = None
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        end = local_clock() + self.seconds
        with Requester(self.endpoint) as req:
            for i, q in enumerate(self.qa.questions):
                if not self.running or local_clock() > end:
                    return
                budget = BUDGETS[i % len(BUDGETS)]
                deadline = 1.0 if i % 20 == 19 else None
                chunk = request.encode(self.qa.frames[q.frame].image, q.text, list(q.options),
                                       budget, deadline, seq=i)
                try:
                    reply = request.read(req.request(chunk, 30.0))
                except (TimeoutError, RemoteError) as exc:
                    self.errors.append(f"request {i}: {type(exc).__name__}: {exc}")
                    continue
                self.replies.append((q.options[q.answer], budget, reply,
                                     local_clock() - chunk.timestamps[0]))
                self.first_at = self.first_at or time.time()
                wait = chunk.timestamps[0] + self.period - local_clock()
                if wait > 0:
                    threading.Event().wait(wait)

    def open(self) -> list:
        return []

    def ready(self, timeout: float) -> bool:
        """The service listens (so no request waits for the pipeline to start)."""
        return listening(self.endpoint, timeout)

    def start(self) -> None:
        self.thread.start()

    def wait(self) -> None:
        self.thread.join()

    def stop(self) -> None:
        self.running = False
        if self.thread.is_alive():
            self.thread.join(6)


def changes(bodies: list[dict], truth: list[str]) -> dict:
    """What the router's extra work did to the first answers: how many it changed, how many
    of those it fixed (first wrong, final right) and broke (first right, final wrong)."""
    changed = [(b["first"]["answer"], b["answer"], t) for b, t in zip(bodies, truth)
               if b["answer"] != b["first"]["answer"]]
    return {"answers_changed": len(changed),
            "answers_fixed": sum(final == t for _, final, t in changed),
            "answers_broken": sum(first == t for first, _, t in changed)}


def metrics(robot: Robot) -> dict:
    if not robot.replies:
        return {"requests": 0, "errors": len(robot.errors)}
    truth = [r[0] for r in robot.replies]
    bodies = [r[2] for r in robot.replies]
    budgets = np.array([r[1] for r in robot.replies])
    spent = np.array([b["spent"] for b in bodies])
    per_action: dict[str, list[float]] = {}
    for b in bodies:
        for step in b["actions"]:
            per_action.setdefault(step["action"], []).append(step["ms"])
    e2e = np.array([r[3] for r in robot.replies]) * 1e3
    return {
        "requests": len(bodies),
        "errors": len(robot.errors),
        "accuracy": float(np.mean([b["answer"] == t for b, t in zip(bodies, truth)])),
        "first_answer_accuracy": float(np.mean([b["first"]["answer"] == t
                                                for b, t in zip(bodies, truth)])),
        **changes(bodies, truth),
        "mean_spent": float(spent.mean()),
        "mean_budget": float(budgets.mean()),
        "over_budget": int(np.sum(spent > np.maximum(budgets, 1.0))),
        "partial": int(sum(b["partial"] for b in bodies)),
        **{f"{a}_per_request": len(v) / len(bodies) for a, v in per_action.items()},
        **{f"{a}_p{q}_ms": float(np.percentile(v, q)) for a, v in per_action.items()
           for q in (50, 99)},
        "client_p50_ms": float(np.percentile(e2e, 50)),
        "client_p99_ms": float(np.percentile(e2e, 99)),
    }


def overrides(service: str, log: str) -> list[str]:
    return [f"requests.endpoint={service}", f"reply.endpoint={service}",
            f"log.endpoint={log}", f"answer.bundle={cached_bundle()}"]


def sources(name: str, seconds: float) -> tuple[list[Robot], list[str]]:
    """A robot asking for `seconds`, and the pipeline's overrides (for `bench`)."""
    service, log = free_endpoint(), free_endpoint()
    return [Robot(service, rate=10.0, seconds=seconds)], overrides(service, log)


def robot(duration: float | None, run, out: Path) -> dict:
    """Run the demo for `duration` seconds (default 30); it draws no figure (`out`)."""
    duration = duration or 30.0
    service, log = free_endpoint(), free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("robot"), overrides(service, log))
    client = Robot(service, rate=10.0)
    report = run_demo(pipe, None, [client], run, duration)
    report["metrics"] = metrics(client)
    report["errors"] = client.errors[:5]
    return report
