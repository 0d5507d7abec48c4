"""Edge: a bounded queue between two nodes with a declared policy; every drop is counted."""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Literal

from edgert.streams import Chunk, local_clock

Policy = Literal["block", "latest"]


class Edge:
    """`block` waits for room (lossless backpressure); `latest` drops the oldest chunk.

    With a deadline, a chunk older than `deadline` seconds (newest sample to hand-over) is
    dropped when the consumer takes it, and counted as expired.
    """

    def __init__(self, src: str, src_port: str, dst: str, dst_port: str,
                 policy: Policy = "block", capacity: int = 64, deadline: float | None = None):
        self.src, self.src_port, self.dst, self.dst_port = src, src_port, dst, dst_port
        self.policy, self.capacity, self.deadline = policy, capacity, deadline
        self.queue: deque[Chunk] = deque()
        self.cond = threading.Condition()
        self.dropped = 0
        self.expired = 0
        self.count = 0
        self.on_put: Callable[[], None] = lambda: None
        self.closed = False

    def put(self, chunk: Chunk) -> None:
        with self.cond:
            if self.policy == "latest":
                if len(self.queue) >= self.capacity:
                    self.queue.popleft()
                    self.dropped += 1
            else:
                while len(self.queue) >= self.capacity and not self.closed:
                    self.cond.wait(0.1)
            self.queue.append(chunk)
            self.count += 1
        self.on_put()

    def fresh(self, chunk: Chunk) -> bool:
        """False (and counted as expired) when the chunk is past the edge's deadline."""
        if self.deadline is None or len(chunk) == 0:
            return True
        if local_clock() - chunk.timestamps[-1] <= self.deadline:
            return True
        self.expired += 1
        return False

    def get(self) -> Chunk | None:
        """The oldest live chunk, or None when empty. Never blocks."""
        with self.cond:
            while self.queue:
                chunk = self.queue.popleft()
                self.cond.notify()
                if self.fresh(chunk):
                    return chunk
        return None

    @property
    def label(self) -> str:
        return f"{self.src}.{self.src_port} -> {self.dst}.{self.dst_port}"

    def __len__(self) -> int:
        return len(self.queue)

    def close(self) -> None:
        """Release producers blocked on a full queue (at shutdown)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
