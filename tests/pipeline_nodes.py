"""Nodes that tests plug into real pipelines: a feed the test fills, a collector, a slow stage."""
from __future__ import annotations

import queue
import time

from edgert.runtime.node import Node, Params, Source
from edgert.streams import Chunk


class Feed(Source):
    """Emits the chunks a test puts in `feed.queue`."""

    def __init__(self, name: str, params: Params, pipeline: str = ""):
        super().__init__(name, params, pipeline)
        self.queue: queue.Queue[Chunk] = queue.Queue()

    def read(self, timeout: float) -> Chunk | None:
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None


class Collect(Node):
    """Keeps every chunk it receives."""

    outputs = ()

    def __init__(self, name: str, params: Params, pipeline: str = ""):
        super().__init__(name, params, pipeline)
        self.chunks: list[Chunk] = []

    def process(self, inputs: dict[str, Chunk]) -> None:
        self.chunks.append(inputs["in"])


class Slow(Node):
    """Stands for an expensive model: takes `seconds` per chunk."""

    class Params(Params):
        seconds: float

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        time.sleep(self.p.seconds)
        return {"out": inputs["in"]}


class Flaky(Node):
    """Raises on every `every`-th chunk; counts how often it was started."""

    class Params(Params):
        every: int = 3

    starts = 0

    def start(self) -> None:
        Flaky.starts += 1
        self.seen = 0

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        self.seen += 1
        if self.seen % self.p.every == 0:
            raise RuntimeError(f"flaky at chunk {self.seen}")
        return {"out": inputs["in"]}
