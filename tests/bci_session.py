"""One live session of the shipped bci pipeline: a synthetic user replayed on LSL, the
probabilities a ZeroMQ subscriber received."""
import time

from edgert.runtime.pipeline import Pipeline
from edgert.streams.replay import Replay
from edgert.streams.zmq_link import Subscriber


def run_session(pipe: Pipeline, streams: list, endpoint: str, trials: int, speed: float = 1.0,
                timeout: float = 60.0) -> list:
    """Replay `streams` through the started-here pipeline until `trials` probability rows came
    over ZeroMQ at `endpoint` (or the run stopped itself, or `timeout` passed)."""
    replay = Replay(streams, chunk_size=8, speed=speed)
    outlets = replay.open()
    sub = Subscriber(endpoint)
    pipe.start()
    received = []
    try:
        for outlet in outlets:
            assert outlet.wait_for_consumers(10.0)
        replay.start()
        deadline = time.monotonic() + timeout
        while (len(received) < trials and time.monotonic() < deadline
               and pipe.scheduler.fatal is None):
            chunk = sub.pull(0.2)
            if chunk is not None:
                received.append(chunk.data)
    finally:
        pipe.stop()
        replay.stop()
        sub.close()
    return received
