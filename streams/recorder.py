"""Record live LSL streams to XDF as LabRecorder does: each stream's whole LSL header, raw
timestamps plus clock offsets, so a reader (pyxdf) can synchronise the streams afterwards."""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pylsl.util import LostError

from edgert.streams.clock import local_clock
from edgert.streams.lsl import Inlet
from edgert.streams.xdf_write import XdfWriter

log = logging.getLogger(__name__)

Query = str | Mapping[str, str]
DRAIN_SECONDS = 1.0


def make_inlet(query: Query, max_buflen: float) -> Inlet:
    """An inlet with no processing flags (raw timestamps); a str query is a stream name."""
    fields = {"name": query} if isinstance(query, str) else dict(query)
    unknown = set(fields) - {"name", "type", "source_id"}
    if unknown:
        raise ValueError(f"recorder query {query!r}: unknown keys {sorted(unknown)}; "
                         f"use name, type and source_id")
    return Inlet(**fields, processing=(), max_buflen=max_buflen)


class Recorder:
    """Records the streams matching `queries` (one stream each) into an XDF file.

    One thread pulls every inlet and writes each pulled chunk at once. As in LabRecorder,
    each stream has a thread that measures its clock offset at start and every
    `clock_interval` seconds (liblsl's first measurement takes ~0.6 s), and stop() takes a
    last one. `counts` holds the samples written per stream name.
    """

    def __init__(self, path: str | os.PathLike, queries: Sequence[Query],
                 clock_interval: float = 5.0, timeout: float = 5.0, max_buflen: float = 360):
        if not queries:
            raise ValueError(f"recorder for {path}: give at least one stream to record")
        self.path = Path(path)
        self.inlets = [make_inlet(q, max_buflen) for q in queries]
        self.clock_interval = clock_interval
        self.timeout = timeout
        self.counts: dict[str, int] = {}
        self.error: BaseException | None = None
        self._writer: XdfWriter | None = None
        self._ids: list[int] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> "Recorder":
        """Find every stream (LookupError naming the missing one), then start recording."""
        if self._writer is not None:
            raise RuntimeError(f"recorder for {self.path} already started")
        for inlet in self.inlets:
            if not inlet.open(self.timeout):
                self._close_inlets()
                raise LookupError(f"recorder for {self.path}: no LSL stream matches "
                                  f"{inlet.describe()} within {self.timeout} s; start its "
                                  f"source or check the name (`edgert streams` lists them)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = XdfWriter(self.path)
        self._ids = [self._writer.add_stream(inlet.info, xml=inlet.xml) for inlet in self.inlets]
        self.counts = {inlet.info.name: 0 for inlet in self.inlets}
        self._threads = [threading.Thread(target=self._guard, args=(self._pull_loop,),
                                          name="recorder-pull", daemon=True)]
        self._threads += [threading.Thread(target=self._guard, args=(self._clock_loop, pair),
                                           name=f"recorder-clock-{pair[0]}", daemon=True)
                          for pair in zip(self._ids, self.inlets)]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        """Drain what has arrived, measure offsets once more, write the footers and close."""
        if self._writer is None:
            return
        self._stop.set()
        for thread in self._threads:
            thread.join()
        if self.error is None:
            for pair in zip(self._ids, self.inlets):
                self._measure_offset(*pair)
        self._writer.close()
        self._close_inlets()
        self._writer = None
        if self.error is not None:
            raise self.error

    def __enter__(self) -> "Recorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _guard(self, target, args=()) -> None:
        try:
            target(*args)
        except BaseException as e:
            log.exception("recording to %s stopped by an error", self.path)
            self.error = e
            self._stop.set()

    def _pull_loop(self) -> None:
        while not self._stop.is_set():
            self._pull_all(timeout=0.01)
        drain_until = time.monotonic() + DRAIN_SECONDS  # bounded: sources may still push
        while self._pull_all(timeout=0.0) and time.monotonic() < drain_until:
            pass

    def _pull_all(self, timeout: float) -> bool:
        """Pull each inlet once and write what came; True if anything did."""
        got = False
        for stream_id, inlet in zip(self._ids, self.inlets):
            chunk = inlet.pull(timeout)
            if chunk is None:
                continue
            self._writer.write(stream_id, chunk)
            self.counts[inlet.info.name] += len(chunk)
            got = True
        return got

    def _clock_loop(self, stream_id: int, inlet: Inlet) -> None:
        self._measure_offset(stream_id, inlet)
        while not self._stop.wait(self.clock_interval):
            self._measure_offset(stream_id, inlet)

    def _measure_offset(self, stream_id: int, inlet: Inlet) -> None:
        """LabRecorder's ClockOffset: collection time in the source's clock, and the offset."""
        if not inlet.connected:  # reconnecting: Inlet.time_correction would say 0.0
            return
        try:
            offset = inlet.time_correction(timeout=2.0)
        except (TimeoutError, LostError) as e:
            log.warning("no clock offset for %s this time: %s", inlet.describe(), e)
            return
        self._writer.write_clock_offset(stream_id, local_clock() - offset, offset)

    def _close_inlets(self) -> None:
        for inlet in self.inlets:
            inlet.close()
