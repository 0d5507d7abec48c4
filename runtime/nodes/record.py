"""Record what reaches this node to a crash-safe XDF file, one XDF stream per input stream."""
from __future__ import annotations

import logging
from pathlib import Path

from pydantic import Field

from edgert.runtime.node import Node, Params
from edgert.streams import Chunk
from edgert.streams.xdf_write import XdfWriter

log = logging.getLogger(__name__)
OFFSET_INTERVAL = 5.0


class XDFRecorder(Node):
    """Writes every chunk as it arrives (NaN and Inf included: nothing recorded is lost).

    Chunks in a pipeline are already in the local clock, so the clock offsets written every
    few seconds (as LabRecorder does) are zero. A write that fails (disk full) ends the
    recording, not the pipeline: the file keeps what was written, the error is logged and
    reported (`failed`), and the samples that could not be written are counted
    (`unrecorded`).
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
        self.samples = self.unrecorded = 0
        self.failed: str | None = None

    def process(self, inputs: dict[str, Chunk]) -> None:
        (port, chunk), = inputs.items()
        if self.failed is None:
            try:
                self._write(port, chunk)
                return
            except OSError as e:
                self.failed = (f"recording to {self.p.path} stopped after {self.samples} "
                               f"samples: {e.strerror or e}; the file keeps them")
                log.error("node %r: %s; the pipeline goes on", self.name, self.failed)
        self.unrecorded += len(chunk)

    def _write(self, port: str, chunk: Chunk) -> None:
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
        try:
            self.writer.close()
        except OSError as e:
            self.failed = self.failed or f"closing {self.p.path} failed: {e.strerror or e}"

    def stats(self) -> dict:
        return {"path": str(self.p.path), "samples": self.samples,
                "unrecorded": self.unrecorded, "failed": self.failed}
