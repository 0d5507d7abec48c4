"""LSL endpoints as nodes: an inlet source and an outlet sink."""
from __future__ import annotations

import logging
import socket
import time
from dataclasses import replace

from pydantic import Field

from edgert.runtime.node import Misconfigured, Node, Params, Source
from edgert.streams import Chunk, StreamInfo
from edgert.streams.lsl import Inlet, Outlet, list_streams

log = logging.getLogger(__name__)
HOST = socket.gethostname()
SLICE_S = 1.0  # the wait for a stream goes in slices, so Ctrl-C is heard between them


def there() -> str:
    """The LSL streams that are on the network, string (marker) streams first."""
    found = sorted(list_streams(0.5), key=lambda i: (i.dtype != "string", i.name))
    if not found:
        return "no LSL stream is on the network"
    what = lambda i: "markers" if i.dtype == "string" else f"{i.n_channels} ch"  # noqa: E731
    return "streams there: " + ", ".join(f"{i.name!r} (type {i.type!r}, {what(i)})"
                                         for i in found)


class LSLInlet(Source):
    """Receives the first LSL stream matching name/type/source_id; reconnects if it vanishes.

    The pipeline does not start until the stream is found: after `wait` seconds the start
    fails, naming the stream, rather than a run waiting on nothing. `wait: 0` starts without
    it, for a sensor the pipeline can do without until it appears. `channels` keeps those
    channels, by label and in that order (a bundle trained on a subset of the cap); a label the
    stream lacks stops the run, naming it."""

    class Params(Params):
        name: str | None = None
        type: str | None = None
        source_id: str | None = None
        processing: list[str] = ["clocksync"]
        max_buflen: float = Field(10.0, gt=0, description="seconds LSL buffers for this inlet")
        max_chunk: int = Field(1024, gt=0)
        reconnect: bool = True
        wait: float = Field(30.0, ge=0, description="seconds to wait for the stream at start; "
                            "0: start without it, connect when it appears")
        channels: list[str] | None = Field(None, description="channel labels to keep, in this "
                                           "order; none: all")

    def start(self) -> None:
        p = self.p
        self.inlet = Inlet(p.name, p.type, p.source_id, tuple(p.processing), p.max_buflen,
                           p.max_chunk, p.reconnect)
        self.picked: tuple[StreamInfo, list[int], StreamInfo] | None = None
        if p.wait == 0:
            return
        deadline = time.monotonic() + p.wait
        if self.inlet.open(min(p.wait, SLICE_S)):
            self._pick(self.inlet.info)
            return
        log.info("waiting up to %g s for the LSL stream %s", p.wait, self.inlet.describe())
        while (left := deadline - time.monotonic()) > 0:
            if self.inlet.open(min(left, SLICE_S)):
                self._pick(self.inlet.info)
                return
        raise LookupError(f"no LSL stream matches {self.inlet.describe()} after {p.wait:g} s; "
                          f"{there()}: start its source, pick one with --set "
                          f"{self.name}.name=NAME (or .type=TYPE; `edgert streams` lists "
                          f"them), or wait longer with --set {self.name}.wait=SECONDS")

    def read(self, timeout: float) -> Chunk | None:
        chunk = self.inlet.pull(timeout)
        if chunk is None or self.p.channels is None:
            return chunk
        _, index, info = self._pick(chunk.info)
        return chunk.derive(chunk.data[:, index], info=info)

    def _pick(self, info: StreamInfo) -> tuple[StreamInfo, list[int], StreamInfo]:
        """Column indices and stream info of the kept channels (found once per stream)."""
        if self.p.channels is None or (self.picked and self.picked[0] == info):
            return self.picked
        upper = [c.upper() for c in info.channels]
        missing = [c for c in self.p.channels if c.upper() not in upper]
        if missing:
            raise Misconfigured(f"stream {info.name!r} has no channel "
                                f"{missing}; it has {list(info.channels)}: fix "
                                f"{self.name}.channels")
        index = [upper.index(c.upper()) for c in self.p.channels]
        units = tuple(info.units[i] for i in index) if len(info.units) == len(upper) else ()
        self.picked = (info, index, replace(info, channels=tuple(info.channels[i]
                                                                for i in index), units=units))
        return self.picked

    def stop(self) -> None:
        self.inlet.close()

    def stats(self) -> dict:
        info = self.inlet.info
        return {"stream": info.name if info else None, "reconnects": self.inlet.reconnects}


class LSLOutlet(Node):
    """Publishes chunks on an LSL outlet, created from the first chunk's stream info.

    `name` may use the input stream's fields: "{name}-passthrough". `source_id` defaults to
    "PIPELINE/NODE@HOST": stable across restarts, so an LSL client (LabRecorder, an inlet)
    recovers the stream when the pipeline comes back.
    """

    outputs = ()

    class Params(Params):
        name: str = "{name}-edgert"
        type: str | None = None
        source_id: str | None = Field(None, description="default: PIPELINE/NODE@HOST")
        chunk_size: int = Field(0, ge=0)
        max_buffered: float = Field(360, gt=0)

    def start(self) -> None:
        self.outlet: Outlet | None = None

    def process(self, inputs: dict[str, Chunk]) -> None:
        chunk = inputs["in"]
        if self.outlet is None:
            self.outlet = Outlet(self._info(chunk), self.p.chunk_size, self.p.max_buffered)
        self.outlet.push(chunk)

    def _info(self, chunk: Chunk) -> StreamInfo:
        info = chunk.info
        return replace(info, name=self.p.name.format(name=info.name, type=info.type),
                       type=self.p.type or info.type,
                       source_id=self.p.source_id or f"{self.pipeline}/{self.name}@{HOST}")

    def stop(self) -> None:
        if self.outlet is not None:
            self.outlet.close()

    def stats(self) -> dict:
        return {"stream": self.outlet.info.name if self.outlet else None}
