"""Record what reaches this node to a crash-safe XDF file, one XDF stream per input stream."""
from __future__ import annotations

from pathlib import Path

from pydantic import Field

from edgert.runtime.node import Node, Params
from edgert.streams import Chunk
from edgert.streams.xdf_write import XdfWriter

OFFSET_INTERVAL = 5.0


class XDFRecorder(Node):
    """Writes every chunk as it arrives (NaN and Inf included: nothing recorded is lost).

    Chunks in a pipeline are already in the local clock, so the clock offsets written every
    few seconds (as LabRecorder does) are zero.
    """

    outputs = ()
    accepts_nonfinite = True

    class Params(Params):
        path: Path
        inputs: list[str] = Field(["in"], min_length=1, description="input ports to record")

    def __init__(self, name: str, params: Params, pipeline: str = ""):
        super().__init__(name, params, pipeline)
        self.inputs = tuple(params.inputs)

    def start(self) -> None:
        self.p.path.parent.mkdir(parents=True, exist_ok=True)
        self.writer = XdfWriter(self.p.path)
        self.ids: dict[tuple[str, str], int] = {}
        self.last_offset: dict[int, float] = {}
        self.samples = 0

    def process(self, inputs: dict[str, Chunk]) -> None:
        (port, chunk), = inputs.items()
        key = (port, chunk.info.name)
        if key not in self.ids:
            self.ids[key] = self.writer.add_stream(chunk.info)
        stream = self.ids[key]
        self.writer.write(stream, chunk)
        self.samples += len(chunk)
        if len(chunk) and chunk.timestamps[-1] - self.last_offset.get(stream, -1e9) >= \
                OFFSET_INTERVAL:
            self.writer.write_clock_offset(stream, float(chunk.timestamps[-1]), 0.0)
            self.last_offset[stream] = float(chunk.timestamps[-1])

    def stop(self) -> None:
        self.writer.close()

    def stats(self) -> dict:
        return {"path": str(self.p.path), "samples": self.samples}
