"""LSL inlets and outlets that speak Chunk: discovery, preallocated pulls, reconnect."""
from __future__ import annotations

import logging
import socket
import threading

import numpy as np
import pylsl
from pylsl.util import LostError

from edgert.streams.chunk import STRING, Chunk, StreamInfo
from edgert.streams.clock import local_clock
from edgert.streams.lsl_config import quiet_defaults

log = logging.getLogger(__name__)
quiet_defaults()

FORMATS = {"float32": pylsl.cf_float32, "float64": pylsl.cf_double64, STRING: pylsl.cf_string,
           "int32": pylsl.cf_int32, "int16": pylsl.cf_int16, "int8": pylsl.cf_int8,
           "int64": pylsl.cf_int64}
DTYPES = {v: k for k, v in FORMATS.items()}
FLAGS = {"clocksync": pylsl.proc_clocksync, "dejitter": pylsl.proc_dejitter,
         "monotonize": pylsl.proc_monotonize, "threadsafe": pylsl.proc_threadsafe}


def to_lsl_info(info: StreamInfo) -> pylsl.StreamInfo:
    """An LSL StreamInfo with channel labels and units in the standard desc/channels layout."""
    if info.dtype not in FORMATS:
        raise ValueError(f"stream {info.name!r}: dtype {info.dtype!r} has no LSL format; "
                         f"use one of {sorted(FORMATS)}")
    out = pylsl.StreamInfo(info.name, info.type, max(info.n_channels, 1), info.rate,
                           FORMATS[info.dtype], info.source_id)
    channels = out.desc().append_child("channels")
    for i, label in enumerate(info.channels):
        ch = channels.append_child("channel")
        ch.append_child_value("label", label)
        if i < len(info.units):
            ch.append_child_value("unit", info.units[i])
        if info.type:
            ch.append_child_value("type", info.type)
    return out


def from_lsl_info(lsl: pylsl.StreamInfo) -> StreamInfo:
    """Our StreamInfo from LSL's, reading channel labels from desc/channels when present."""
    labels, units = [], []
    ch = lsl.desc().child("channels").child("channel")
    while not ch.empty():
        labels.append(ch.child_value("label"))
        units.append(ch.child_value("unit"))
        ch = ch.next_sibling("channel")
    n = lsl.channel_count()
    if len(labels) != n:
        labels, units = [f"ch{i}" for i in range(n)], []
    units = units if any(units) else []
    return StreamInfo(name=lsl.name(), type=lsl.type(), channels=tuple(labels),
                      units=tuple(units), rate=lsl.nominal_srate(),
                      dtype=DTYPES[lsl.channel_format()], source_id=lsl.source_id())


RESOLVE_WAIT = 1.0  # seconds an unconnected inlet waits for its stream per pull


def predicate(name: str | None = None, type: str | None = None,
              source_id: str | None = None) -> str:
    """An XPath predicate for resolve_bypred; empty matches every stream."""
    parts = [f"{key}='{value}'" for key, value in
             (("name", name), ("type", type), ("source_id", source_id)) if value]
    return " and ".join(parts)


def resolve(name: str | None = None, type: str | None = None, source_id: str | None = None,
            timeout: float = 2.0, minimum: int = 1) -> list[pylsl.StreamInfo]:
    """Streams matching every given property (all streams when none is given), returned as
    soon as `minimum` answered."""
    pred = predicate(name, type, source_id)
    if not pred:
        return pylsl.resolve_streams(wait_time=timeout)
    return pylsl.resolve_bypred(pred, minimum=minimum, timeout=timeout)


SURVEY_S = 1.5  # how long an opened inlet keeps listening for other streams that match


def warn_if_ambiguous(query: dict, taken: pylsl.StreamInfo) -> None:
    """Warn, naming every match and the one taken, when more than one stream matches.
    Run beside the inlet: the first answer opens it at once, the others come later."""
    found = resolve(**query, timeout=SURVEY_S, minimum=2)
    if len(found) > 1:
        log.warning("%d LSL streams match %s (%s); took %r from %s: give its name or "
                    "source_id to choose", len(found), predicate(**query) or "any stream",
                    ", ".join(f"{f.name()!r} from {f.hostname()}" for f in found),
                    taken.name(), taken.hostname())


def list_streams(timeout: float = 1.0) -> list[StreamInfo]:
    return [from_lsl_info(s) for s in pylsl.resolve_streams(wait_time=timeout)]


class Outlet:
    """An LSL outlet that pushes chunks with their own per-sample timestamps."""

    def __init__(self, info: StreamInfo, chunk_size: int = 0, max_buffered: float = 360):
        self.info = info
        self._outlet = pylsl.StreamOutlet(to_lsl_info(info), chunk_size, int(max_buffered))
        self.pushed = 0

    def push(self, chunk: Chunk) -> None:
        n = len(chunk)
        if n == 0:
            return
        if chunk.data.ndim != 2 or chunk.data.shape[1] != max(self.info.n_channels, 1):
            raise ValueError(f"outlet {self.info.name!r}: chunk of shape {chunk.data.shape} "
                             f"does not fit {self.info.n_channels} channels")
        data = chunk.data.tolist() if chunk.is_string else chunk.data
        stamps = float(chunk.timestamps[0]) if n == 1 else chunk.timestamps.tolist()
        self._outlet.push_chunk(data, stamps)
        self.pushed += n

    def have_consumers(self) -> bool:
        return self._outlet.have_consumers()

    def wait_for_consumers(self, timeout: float) -> bool:
        return self._outlet.wait_for_consumers(timeout)

    def close(self) -> None:
        self._outlet = None


class Inlet:
    """An LSL inlet found by name/type/source_id that reconnects when its source returns.

    Pulls block until at least one sample is there (min_samples=1), so latency is the hand-off
    cost and not a timeout. Processing flags are applied as given, but for clocksync on a
    source of this host: it stamps with this very clock, so its offset is zero and estimating
    it only adds the estimate's noise (up to half a millisecond at p99 here). When the source
    is lost, the first chunk after it comes back has `gap=True` and `reconnects` counts the
    return (once per outage, however many stale resolves it took).
    """

    def __init__(self, name: str | None = None, type: str | None = None,
                 source_id: str | None = None, processing: tuple[str, ...] = ("clocksync",),
                 max_buflen: float = 10.0, max_chunk: int = 1024, reconnect: bool = True):
        unknown = set(processing) - set(FLAGS)
        if unknown:
            raise ValueError(f"unknown LSL processing flags {sorted(unknown)}; "
                             f"choose from {sorted(FLAGS)}")
        self.query = dict(name=name, type=type, source_id=source_id)
        self.flags = 0
        self.applied = 0  # the flags in use: `flags` less clocksync for this host's streams
        for flag in processing:
            self.flags |= FLAGS[flag]
        self.max_buflen = max_buflen
        self.max_chunk = max_chunk
        self.reconnect = reconnect
        self.reconnects = 0
        self.info: StreamInfo | None = None
        self.xml: str | None = None  # the stream's whole LSL header, <desc> included
        self._inlet: pylsl.StreamInlet | None = None
        self._buffer: np.ndarray | None = None
        self._seq = 0
        self._gap = False

    def describe(self) -> str:
        return predicate(**self.query) or "any stream"

    def open(self, timeout: float = 5.0) -> bool:
        """Resolve the stream and open the inlet; False if nothing matched within timeout."""
        found = resolve(**self.query, timeout=timeout)
        if not found:
            return False
        lsl_info = found[0]
        threading.Thread(target=warn_if_ambiguous, args=(self.query, lsl_info), daemon=True,
                         name="lsl-survey").start()
        buflen = self.max_buflen if lsl_info.nominal_srate() > 0 else self.max_buflen * 100
        self.applied = self.flags
        if lsl_info.hostname() == socket.gethostname():
            self.applied &= ~FLAGS["clocksync"]
        self._inlet = pylsl.StreamInlet(lsl_info, max_buflen=max(1, round(buflen)),
                                        max_chunklen=0, recover=False,
                                        processing_flags=self.applied)
        full = self._inlet.info(timeout=timeout)
        info = from_lsl_info(full)
        self.xml = full.as_xml()
        if self.info is not None and (info.n_channels, info.dtype) != (
                self.info.n_channels, self.info.dtype):
            log.warning("stream %s came back with %d channels of %s (was %d of %s)",
                        self.describe(), info.n_channels, info.dtype,
                        self.info.n_channels, self.info.dtype)
        self.info = info
        if info.dtype != STRING:
            self._buffer = np.empty((self.max_chunk, max(info.n_channels, 1)), info.dtype)
        self._inlet.open_stream(timeout=timeout)
        return True

    def pull(self, timeout: float = 0.2) -> Chunk | None:
        """The samples that arrived, waiting up to `timeout` for the first; None if none came."""
        if self._inlet is None:
            # a fresh liblsl query answers only after its first wave (~0.5 s on loopback):
            # shorter waits would never find a stream nobody resolved before
            if not self.open(max(timeout, RESOLVE_WAIT)):
                return None
        try:
            data, stamps = self._pull(timeout)
        except LostError:
            self._lost()
            return None
        if len(stamps) == 0:
            return None
        chunk = Chunk(data=data, timestamps=stamps, info=self.info, seq=self._seq, gap=self._gap)
        chunk.trace.append(("lsl_inlet", float(stamps[-1]), local_clock()))
        self._seq += 1
        if self._gap:  # data flows again: one outage, however many tries it took
            self.reconnects += 1
        self._gap = False
        return chunk

    def _pull(self, timeout: float) -> tuple[np.ndarray, np.ndarray]:
        if self._buffer is None:
            samples, stamps = self._inlet.pull_chunk(timeout, self.max_chunk, min_samples=1)
            width = max(self.info.n_channels, 1)
            return np.array(samples, dtype=object).reshape(len(stamps), width), np.asarray(stamps)
        # pull_chunk(min_samples=1) always makes a second, draining call; make it only when
        # more samples wait (saves a liblsl round trip per sample on 1-sample chunks).
        buf = self._buffer
        _, stamps = self._inlet.pull_chunk(timeout, 1, dest_obj=buf, as_numpy=True)
        if len(stamps) and self._inlet.samples_available():
            _, more = self._inlet.pull_chunk(0.0, self.max_chunk - 1, dest_obj=buf[1:],
                                             as_numpy=True)
            stamps = np.concatenate([stamps, more])
        return buf[:len(stamps)].copy(), stamps

    def _lost(self) -> None:
        if not self.reconnect:
            raise ConnectionError(f"LSL stream {self.describe()} was lost")
        if not self._gap:
            log.warning("LSL stream %s lost; waiting for it to come back", self.describe())
        self._gap = True
        self.close()

    @property
    def connected(self) -> bool:
        return self._inlet is not None

    def time_correction(self, timeout: float = 2.0) -> float:
        return self._inlet.time_correction(timeout) if self._inlet else 0.0

    def close(self) -> None:
        if self._inlet is not None:
            self._inlet.close_stream()
        self._inlet = None
