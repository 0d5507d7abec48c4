"""A camera or video file as a source node: one RGB frame per chunk, stamped at capture."""
from __future__ import annotations

from pydantic import Field

from edgert.runtime.node import Params, Source
from edgert.streams import Chunk
from edgert.streams.video import VideoSource


class Video(Source):
    class Params(Params):
        source: str | int = Field(description="a file path, or a camera index such as 0")
        rate: float | None = Field(None, gt=0, description="frames per second; default: the "
                                   "file's own")
        realtime: bool = True
        loop: bool = False
        name: str | None = None

    def start(self) -> None:
        p = self.p
        self.video = VideoSource(p.source, p.rate, p.realtime, p.loop, p.name)

    def read(self, timeout: float) -> Chunk | None:
        return self.video.read(timeout)

    def stop(self) -> None:
        self.video.close()
