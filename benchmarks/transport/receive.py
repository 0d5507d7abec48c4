"""The one receiver of every variant, in the benchmarking process: an LSL inlet or a ZeroMQ SUB.

Each pull is stamped with local_clock the moment it returns, before anything is decoded or
copied, so every variant pays the same receiving cost.
"""
from __future__ import annotations

import time

import numpy as np
import zmq

from edgert.streams import local_clock, wire
from edgert.streams.lsl import Inlet


class LslReceiver:
    """Pulls (receipt time, counter values, timestamps) from the stream called `name`."""

    def __init__(self, name: str, timeout: float):
        self.name = name
        self.inlet = Inlet(name=name, processing=(), reconnect=False)
        if not self.inlet.open(timeout):
            raise RuntimeError(f"LSL stream {name!r} never appeared within {timeout} s")

    def pull(self, timeout: float) -> tuple | None:
        try:
            chunk = self.inlet.pull(timeout)
        except ConnectionError:
            raise RuntimeError(f"LSL stream {self.name!r} was lost mid-run") from None
        if chunk is None:
            return None
        now = local_clock()
        return now, chunk.data[:, 0].astype(np.float64), chunk.timestamps

    def close(self) -> None:
        self.inlet.close()


class ZmqReceiver:
    """Pulls (receipt time, seq, newest sample's timestamp) from a plain pyzmq SUB socket,
    connected to `endpoint`, or bound to a free loopback port when no endpoint is given."""

    def __init__(self, endpoint: str | None = None):
        self.socket = zmq.Context.instance().socket(zmq.SUB)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        if endpoint is None:
            self.socket.bind("tcp://127.0.0.1:*")
            endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            self.socket.connect(endpoint)
        self.endpoint = endpoint

    def pull(self, timeout: float) -> tuple | None:
        if not self.socket.poll(int(timeout * 1000)):
            return None
        frames = self.socket.recv_multipart(copy=False)
        now = local_clock()
        chunk = wire.decode(frames[1:])
        return now, chunk.seq, float(chunk.timestamps[-1])

    def close(self) -> None:
        self.socket.close(linger=0)


def wait_first(receiver, timeout: float) -> bool:
    """True once anything arrived, False if nothing did within `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if receiver.pull(0.5) is not None:
            return True
    return False


def collect(receiver, seconds: float) -> list[tuple]:
    """Every pull for `seconds` s."""
    rows = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        row = receiver.pull(min(0.5, max(0.0, end - time.monotonic())))
        if row is not None:
            rows.append(row)
    return rows
