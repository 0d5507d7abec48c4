"""Write XDF files the way LabRecorder does, append-only so that a killed recorder leaves a
file that pyxdf reads up to the last chunk written.

Each XDF chunk is built fully in memory and handed to the kernel with os.write on an
unbuffered descriptor, so nothing of a chunk waits in a user-space buffer when the process
dies; the data is fsynced at every boundary chunk and on close.
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np

from edgert.streams.chunk import STRING, Chunk, StreamInfo
from edgert.streams.clock import local_clock

MAGIC = b"XDF:"
FILE_HEADER, STREAM_HEADER, SAMPLES, CLOCK_OFFSET, BOUNDARY, STREAM_FOOTER = range(1, 7)
# The 16-byte UUID LabRecorder writes; readers scan for it to resync after a corrupt chunk.
BOUNDARY_UUID = bytes([0x43, 0xA5, 0x46, 0xDC, 0xCB, 0xF5, 0x41, 0x0F,
                       0xB3, 0x0E, 0xD5, 0x46, 0x73, 0x83, 0xCB, 0xE4])
XDF_FORMATS = {"float32": "float32", "float64": "double64", STRING: "string",
               "int32": "int32", "int16": "int16", "int8": "int8", "int64": "int64"}


def varlen(n: int) -> bytes:
    """XDF's variable-length integer: a byte giving the width (1, 4 or 8), then the value."""
    if n < 1 << 8:
        return struct.pack("<BB", 1, n)
    if n < 1 << 32:
        return struct.pack("<BI", 4, n)
    return struct.pack("<BQ", 8, n)


def chunk_bytes(tag: int, content: bytes) -> bytes:
    """[NumLengthBytes][Length][Tag][Content]; Length counts the tag and the content."""
    return varlen(len(content) + 2) + struct.pack("<H", tag) + content


def xml_bytes(root: ET.Element) -> bytes:
    return b'<?xml version="1.0"?>' + ET.tostring(root, encoding="utf-8", xml_declaration=False)


def _add(parent: ET.Element, tag: str, text: object) -> ET.Element:
    child = ET.SubElement(parent, tag)
    child.text = str(text)
    return child


def file_header_xml() -> bytes:
    root = ET.Element("info")
    _add(root, "version", "1.0")
    _add(root, "datetime", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S%z"))
    _add(root, "writer", "edgert")
    return xml_bytes(root)


def stream_header_xml(info: StreamInfo, created_at: float) -> bytes:
    """The header fields LSL puts in a stream's XML, plus desc/channels when labels exist."""
    root = ET.Element("info")
    for tag, value in (("name", info.name), ("type", info.type),
                       ("channel_count", max(info.n_channels, 1)),
                       ("channel_format", XDF_FORMATS[info.dtype]),
                       ("source_id", info.source_id), ("nominal_srate", repr(float(info.rate))),
                       ("version", "1.1"), ("created_at", repr(created_at)),
                       ("uid", uuid.uuid4()), ("hostname", socket.gethostname())):
        _add(root, tag, value)
    desc = ET.SubElement(root, "desc")
    if info.channels:
        channels = ET.SubElement(desc, "channels")
        for i, label in enumerate(info.channels):
            channel = ET.SubElement(channels, "channel")
            _add(channel, "label", label)
            if i < len(info.units):
                _add(channel, "unit", info.units[i])
            if info.type:
                _add(channel, "type", info.type)
    return xml_bytes(root)


def footer_xml(first: float, last: float, count: int,
               offsets: list[tuple[float, float]]) -> bytes:
    root = ET.Element("info")
    _add(root, "first_timestamp", repr(first))
    _add(root, "last_timestamp", repr(last))
    _add(root, "sample_count", count)
    clock = ET.SubElement(root, "clock_offsets")
    for time, value in offsets:
        offset = ET.SubElement(clock, "offset")
        _add(offset, "time", repr(time))
        _add(offset, "value", repr(value))
    return xml_bytes(root)


def numeric_samples(data: np.ndarray, timestamps: np.ndarray) -> bytes:
    """Per sample: TimeStampBytes=8, float64 timestamp, values; all little-endian, packed."""
    n, channels = data.shape
    layout = np.dtype([("bytes", "u1"), ("stamp", "<f8"),
                       ("values", data.dtype.newbyteorder("<"), (channels,))])
    packed = np.empty(n, layout)
    packed["bytes"] = 8
    packed["stamp"] = timestamps
    packed["values"] = data
    return packed.tobytes()


def string_samples(data: np.ndarray, timestamps: np.ndarray) -> bytes:
    """Per sample: TimeStampBytes=8, float64 timestamp, then each value as varlen + UTF-8."""
    parts = []
    for stamp, row in zip(timestamps.tolist(), data):
        parts.append(struct.pack("<Bd", 8, stamp))
        for value in row:
            raw = str(value).encode("utf-8")
            parts.append(varlen(len(raw)))
            parts.append(raw)
    return b"".join(parts)


@dataclass
class _Stream:
    info: StreamInfo
    first: float = 0.0
    last: float = 0.0
    count: int = 0
    offsets: list[tuple[float, float]] = field(default_factory=list)


class XdfWriter:
    """An XDF file written chunk by chunk; safe to call from several threads.

    Boundary chunks go in every `boundary_interval` seconds of data (and after a clock
    reset), as LabRecorder does, so a reader can resynchronise after a damaged chunk.
    """

    def __init__(self, path: str | os.PathLike, boundary_interval: float = 10.0):
        self.path = Path(path)
        self.boundary_interval = boundary_interval
        self._lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._boundary_at: float | None = None
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._write(MAGIC + chunk_bytes(FILE_HEADER, file_header_xml()))

    def add_stream(self, info: StreamInfo, created_at: float | None = None,
                   xml: str | None = None) -> int:
        """Write the stream's header and return its XDF stream id (1, 2, ...). `xml`, the
        stream's whole LSL header (an inlet's `info().as_xml()`), is written as it is, as
        LabRecorder does: every field of its <desc> (manufacturer, cap, reference...) kept."""
        if info.dtype not in XDF_FORMATS:
            raise ValueError(f"{self.path}: stream {info.name!r} has dtype {info.dtype!r}, "
                             f"which XDF cannot store; use one of {sorted(XDF_FORMATS)}")
        header = xml.encode() if xml else stream_header_xml(
            info, local_clock() if created_at is None else created_at)
        with self._lock:
            stream_id = len(self._streams) + 1
            self._streams[stream_id] = _Stream(info)
            self._write(chunk_bytes(STREAM_HEADER, struct.pack("<I", stream_id) + header))
        return stream_id

    def write(self, stream_id: int, chunk: Chunk) -> None:
        """Append the chunk's samples with their timestamps as one Samples chunk."""
        stream = self._stream(stream_id)
        data, stamps = self._checked(stream, chunk)
        if len(stamps) == 0:
            return
        body = string_samples(data, stamps) if stream.info.dtype == STRING else \
            numeric_samples(data, stamps)
        content = struct.pack("<I", stream_id) + varlen(len(stamps)) + body
        with self._lock:
            self._write(chunk_bytes(SAMPLES, content))
            if stream.count == 0:
                stream.first = float(stamps[0])
            stream.last = float(stamps[-1])
            stream.count += len(stamps)
            self._maybe_boundary(stream.last)

    def write_clock_offset(self, stream_id: int, collection_time: float, offset: float) -> None:
        """Record that the stream's clock read `collection_time` when it was `offset` s
        behind ours (LabRecorder: collection_time = local_clock() - time_correction())."""
        stream = self._stream(stream_id)
        content = struct.pack("<Idd", stream_id, collection_time, offset)
        with self._lock:
            self._write(chunk_bytes(CLOCK_OFFSET, content))
            stream.offsets.append((float(collection_time), float(offset)))

    def close(self) -> None:
        """Write every stream's footer and close the file; calling it twice is harmless."""
        with self._lock:
            if self._fd is None:
                return
            for stream_id, s in self._streams.items():
                footer = footer_xml(s.first, s.last, s.count, s.offsets)
                self._write(chunk_bytes(STREAM_FOOTER, struct.pack("<I", stream_id) + footer))
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "XdfWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _stream(self, stream_id: int) -> _Stream:
        if stream_id not in self._streams:
            raise KeyError(f"{self.path}: no stream with id {stream_id}; "
                           f"add it first with add_stream (known: {sorted(self._streams)})")
        return self._streams[stream_id]

    def _checked(self, stream: _Stream, chunk: Chunk) -> tuple[np.ndarray, np.ndarray]:
        info = stream.info
        width = max(info.n_channels, 1)
        data = np.asarray(chunk.data, dtype=object if info.dtype == STRING else info.dtype)
        if data.ndim == 1 and width == 1:
            data = data.reshape(-1, 1)
        stamps = np.asarray(chunk.timestamps, dtype=np.float64)
        if data.ndim != 2 or data.shape != (len(stamps), width):
            raise ValueError(f"{self.path}: stream {info.name!r} expects (samples, {width}) "
                             f"data with one timestamp per sample; got data "
                             f"{np.shape(chunk.data)} and {len(stamps)} timestamps")
        return data, stamps

    def _maybe_boundary(self, stamp: float) -> None:
        if self._boundary_at is None:
            self._boundary_at = stamp
        elif stamp - self._boundary_at >= self.boundary_interval or stamp < self._boundary_at:
            self._write(chunk_bytes(BOUNDARY, BOUNDARY_UUID))
            os.fsync(self._fd)
            self._boundary_at = stamp

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise ValueError(f"XDF file {self.path} is already closed")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
