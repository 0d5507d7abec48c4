"""Data on the wire: chunks, stream info, the clock; LSL, ZeroMQ, XDF, video and replay.

`local_clock` loads liblsl on first use, so `edgert doctor` can still run, and say how to
install liblsl, on a machine without it."""
from edgert.streams.chunk import STRING, Chunk, StreamInfo

__all__ = ["STRING", "Chunk", "StreamInfo", "local_clock"]


def __getattr__(name: str):
    if name == "local_clock":
        from edgert.streams.clock import local_clock
        return local_clock
    raise AttributeError(f"module 'edgert.streams' has no attribute {name!r}")
