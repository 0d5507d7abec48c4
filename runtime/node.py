"""Node: one stage of a pipeline. Sources produce chunks, other nodes transform or sink them."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict

from edgert.streams import Chunk, StreamInfo

Outputs = dict[str, "Chunk | list[Chunk]"] | None
UserPath = Annotated[Path, AfterValidator(Path.expanduser)]  # "~/..." works in pipeline files


class Params(BaseModel):
    """A node's parameters, validated when the pipeline loads; unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class BadChunk(ValueError):
    """Raised by a node for a chunk it cannot use; the pipeline quarantines it and goes on."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Misconfigured(ValueError):
    """Raised by a node whose parameters cannot work with the stream it got (a cut-off above
    that stream's Nyquist frequency): every chunk would fail alike, so the run stops and says
    which node and field to change, instead of quarantining everything. Raised from `check`,
    a stranger's stream cannot stop a run (see `Node.check`)."""


class Node:
    """A stage: `process(inputs) -> outputs`, with `start()` / `stop()` around a run.

    A node owns its state (filter state, ring buffers, statistics). `process` gets one
    arriving chunk as {port: chunk} and returns {port: chunk or list of chunks} or None.
    """

    Params: ClassVar[type[Params]] = Params
    inputs: ClassVar[tuple[str, ...]] = ("in",)
    outputs: ClassVar[tuple[str, ...]] = ("out",)
    accepts_nonfinite: ClassVar[bool] = False
    latency: ClassVar[bool] = True  # False: a sink that only watches (it ends no latency)

    def __init__(self, name: str, params: Params, pipeline: str = ""):
        self.name = name
        self.p = params
        self.pipeline = pipeline  # the name of the pipeline it runs in

    def start(self) -> None:
        """Open devices and sockets. Called once before the first chunk."""

    def stop(self) -> None:
        """Release what start() took. Called once after the last chunk."""

    def check(self, port: str, info: StreamInfo) -> None:
        """Raise Misconfigured, naming the field to change, if this node cannot take the
        stream `info` on input `port` (an irregular stream into a filter, a cut-off above its
        Nyquist frequency). Called once per new stream per input, before its first chunk.
        The stream's chunks are quarantined (kind `stream`); the run stops only when it is
        the first stream on that input and more than one chunk of it came, so one stray frame
        of another stream never stops a run."""

    def process(self, inputs: dict[str, Chunk]) -> Outputs:
        raise NotImplementedError(f"node {self.name!r} ({type(self).__name__}) has no process()")

    def stats(self) -> dict:
        """Node-specific counters for the report (reconnects, skew, ...)."""
        return {}


class Source(Node):
    """A node with no inputs: the scheduler calls `read` in the node's own thread."""

    inputs = ()

    def read(self, timeout: float) -> Chunk | None:
        """The next chunk, waiting at most `timeout` seconds; None if nothing came."""
        raise NotImplementedError(f"source {self.name!r} ({type(self).__name__}) has no read()")
