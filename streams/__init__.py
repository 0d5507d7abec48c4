"""Data on the wire: chunks, stream info, the clock; LSL, ZeroMQ, XDF, video and replay."""
from edgert.streams.chunk import STRING, Chunk, StreamInfo
from edgert.streams.clock import local_clock

__all__ = ["STRING", "Chunk", "StreamInfo", "local_clock"]
