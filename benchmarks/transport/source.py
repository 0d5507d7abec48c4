"""The replayed amplifier every variant is fed by, in a child process of its own.

A counter on every channel (sample i holds i), replayed in real time, so a receiver can tell
which sample it holds, when it was due, and which are missing. The same chunks go out as an
LSL outlet or as a ZeroMQ publisher (streams.wire), so both transports carry identical data.
"""
from __future__ import annotations

import multiprocessing as mp
import time
import uuid
from dataclasses import dataclass

import numpy as np

from edgert.streams import StreamInfo
from edgert.streams.replay import Replay
from edgert.streams.zmq_link import Publisher

# Longer than any run; the parent kills the amplifier when it has measured enough.
LIFETIME_S = 120.0


@dataclass
class Source:
    """A running amplifier: sample i is stamped t_start + i / rate in local_clock."""

    process: mp.Process
    name: str
    rate: float
    t_start: float
    endpoint: str | None

    def stop(self) -> None:
        self.process.kill()
        self.process.join(10)


def _amplifier(conn, transport: str, name: str, channels: int, rate: float,
               chunk: int) -> None:
    """Child process: replay the counter, then tell the parent its start time and endpoint."""
    n = int(LIFETIME_S * rate)
    data = np.repeat(np.arange(n, dtype=np.float32)[:, None], channels, axis=1)
    info = StreamInfo.make(name, channels, type="EEG", rate=rate, source_id=name)
    kw = {"make_sink": lambda _: Publisher("tcp://127.0.0.1:*")} if transport == "zmq" else {}
    replay = Replay.from_arrays(info, data, chunk_size=chunk, **kw).start()
    endpoint = replay.sinks[0].endpoint if transport == "zmq" else None
    conn.send((replay.t_start, endpoint))
    replay.wait()


def start_source(transport: str, channels: int, rate: float, chunk: int) -> Source:
    """Start an amplifier ("lsl" or "zmq") with a unique stream name."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_amplifier, daemon=True,
                          args=(child, transport, name, channels, rate, chunk))
    process.start()
    deadline = time.monotonic() + 30
    while not parent.poll(0.1):
        if not process.is_alive() or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the {transport} amplifier {name} did not start "
                               f"(exit code {process.exitcode})")
    t_start, endpoint = parent.recv()
    return Source(process, name, rate, t_start, endpoint)
