"""The ZeroMQ wire format of a chunk: [header, payload], header in msgpack, payload raw bytes.

docs/wire.md is the specification; this module is its reference implementation. Numeric
payloads travel without copies on either side: `encode` hands ZeroMQ a view of the array's
memory and `decode` wraps the received frame with np.frombuffer.
"""
from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np

from edgert.streams.chunk import STRING, Chunk, StreamInfo

VERSION = 1
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
REGULAR_TOLERANCE = 1e-9
MAX_DIMS = 8  # samples, then up to 7 dimensions per sample (images: H, W, C)
MAX_SIZE = 2**32  # no dimension, and no sample, holds more values than this
MAX_SEQ = 2**63
MAX_TIME = 1e12  # seconds: a clock (monotonic or Unix) reads far less; larger is not a time
MIN_RATE, MAX_RATE = 1e-6, 1e9  # Hz: a sample a fortnight to a sample a nanosecond
MAX_TEXT, MAX_CHANNELS, MAX_TRACE = 1024, 65536, 256  # name and label lengths, labels, stages
HEADER_KEYS = {"v": int, "stream": dict, "seq": int, "gap": bool, "dtype": str, "shape": list}
STREAM_KEYS = {"name": str, "type": str, "channels": list, "units": list, "rate": (int, float),
               "dtype": str, "source_id": str}
Frame = bytes | bytearray | memoryview


class WireError(ValueError):
    """A message that does not follow the wire format; names the stream and the field."""

    def __init__(self, stream: str | None, field: str, problem: str):
        self.stream = stream
        self.field = field
        where = f"stream {stream!r}" if stream is not None else "message"
        super().__init__(f"{where}: field {field!r}: {problem}")


class RemoteError(RuntimeError):
    """The peer answered a request with an error message instead of a chunk."""


def encode(chunk: Chunk) -> list[bytes | memoryview]:
    """[header, payload]; a numeric payload is a view of chunk.data, so do not modify it after."""
    data = _wire_array(chunk)
    header = encode_header(chunk)
    if _is_string(data):
        return [header, msgpack.packb(data.tolist())]
    return [header, memoryview(data.reshape(-1).view(np.uint8))]


def encode_header(chunk: Chunk) -> bytes:
    """The msgpack header of a chunk: t0 + rate when the timestamps allow it, else the list."""
    info, data = chunk.info, chunk.data
    stamps = np.asarray(chunk.timestamps, dtype=np.float64)
    if data.ndim == 0 or len(stamps) != data.shape[0]:
        raise WireError(info.name, "timestamps", f"{len(stamps)} timestamps for data of "
                        f"shape {data.shape}; expected one per sample (first axis)")
    header: dict[str, Any] = {
        "v": VERSION, "seq": int(chunk.seq), "gap": bool(chunk.gap),
        "stream": {"name": info.name, "type": info.type, "channels": list(info.channels),
                   "units": list(info.units), "rate": float(info.rate), "dtype": info.dtype,
                   "source_id": info.source_id},
        "dtype": STRING if _is_string(data) else data.dtype.name,
        "shape": list(data.shape)}
    if _regular(stamps, info.rate):
        header.update(t0=float(stamps[0]), rate=float(info.rate))
    else:
        header["timestamps"] = stamps.tolist()
    if chunk.trace:
        header["trace"] = [[stage, float(enter), float(exit)] for stage, enter, exit in chunk.trace]
    return msgpack.packb(header)


def encode_error(message: str) -> list[bytes]:
    """An error reply: header {"v": 1, "error": message} and an empty payload."""
    return [msgpack.packb({"v": VERSION, "error": message}), b""]


def decode(frames: list, reply: bool = False) -> Chunk:
    """A chunk from [header, payload]; numeric data is a view of the payload frame, no copy.

    Anything malformed raises WireError, whatever part of the message is wrong: a receiver
    counts it and reads on. An error reply raises RemoteError, but only where one may come
    (`reply`: the answer to a request); elsewhere it is a WireError like any bad header.
    The view may be unaligned (ZeroMQ packs small messages into one receive buffer) and is
    read-only when the frame is immutable (bytes); copy it where that matters.
    """
    try:
        return _decode(frames, reply)
    except (WireError, RemoteError):
        raise
    except Exception as exc:  # a defect of this module; the peer's message is still refused
        raise WireError(None, "message", f"cannot be decoded ({type(exc).__name__}: {exc})") \
            from None


def _decode(frames: list, reply: bool) -> Chunk:
    if len(frames) != 2:
        raise WireError(None, "frames", f"expected 2 frames [header, payload], got {len(frames)}")
    header = decode_header(frames[0], reply)
    name = header["stream"]["name"]
    shape = tuple(header["shape"])
    payload = memoryview(frames[1])
    if header["dtype"] == STRING:
        data = _decode_strings(payload, shape, name)
    else:
        dtype = np.dtype(header["dtype"]).newbyteorder("<")
        need = math.prod(shape) * dtype.itemsize
        if payload.nbytes != need:
            raise WireError(name, "payload", f"{payload.nbytes} bytes, but shape {list(shape)} "
                            f"of {header['dtype']} needs {need}")
        data = np.frombuffer(payload, dtype=dtype).reshape(shape)
    return Chunk(data=data, timestamps=_timestamps(header, shape[0]), info=_info(header),
                 seq=header["seq"], gap=header["gap"],
                 trace=[(s, float(a), float(b)) for s, a, b in header.get("trace", [])])


def decode_header(frame: Frame, reply: bool = False) -> dict[str, Any]:
    """The header map, checked: every field present with the right type and a value it may
    have (a known dtype, finite times, sizes a sample can hold)."""
    try:
        header = msgpack.unpackb(frame)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise WireError(None, "header", f"not a msgpack map ({exc})") from None
    if not isinstance(header, dict):
        raise WireError(None, "header", f"expected a msgpack map, got {type(header).__name__}")
    if header.get("v") != VERSION:
        raise WireError(None, "v", f"wire version {header.get('v')!r} is not supported "
                        f"(this reader speaks {VERSION})")
    if "error" in header:
        if reply:
            raise RemoteError(str(header["error"]))
        raise WireError(None, "error", f"an error reply ({str(header['error'])[:200]!r}) "
                        "where a chunk was expected")
    stream = header.get("stream")
    name = stream.get("name") if isinstance(stream, dict) else None
    name = name[:MAX_TEXT] if isinstance(name, str) else None  # quoted in errors: bounded
    _check(header, HEADER_KEYS, name, "")
    _check(stream, STREAM_KEYS, name, "stream.")
    for key in ("channels", "units"):
        if not all(isinstance(x, str) for x in stream[key]):
            raise WireError(name, f"stream.{key}", "expected an array of strings")
    _check_values(header, stream, name)
    _check_layout(header, name)
    return header


def _wire_array(chunk: Chunk) -> np.ndarray:
    """chunk.data as the payload needs it: C-ordered little-endian numbers, or str values."""
    data = chunk.data
    if _is_string(data):
        if not all(isinstance(x, str) for x in data.flat):
            raise WireError(chunk.info.name, "data", "a string chunk may hold only str values")
        return data
    if data.dtype.name not in DTYPES:
        raise WireError(chunk.info.name, "dtype", f"{data.dtype} cannot go on the wire; "
                        f"use one of {', '.join(DTYPES)} or str")
    return np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<"))


def _is_string(data: np.ndarray) -> bool:
    return data.dtype.kind in "OU"


def _regular(stamps: np.ndarray, rate: float) -> bool:
    if rate <= 0 or len(stamps) == 0:
        return False
    expected = stamps[0] + np.arange(len(stamps)) / rate
    return bool(np.all(np.abs(stamps - expected) <= REGULAR_TOLERANCE))


def _check(mapping: dict, keys: dict, name: str | None, prefix: str) -> None:
    for key, kind in keys.items():
        if key not in mapping:
            raise WireError(name, prefix + key, "missing")
        value = mapping[key]
        wrong_bool = isinstance(value, bool) and kind is not bool
        if wrong_bool or not isinstance(value, kind):
            raise WireError(name, prefix + key, f"expected {_kind_name(kind)}, "
                            f"got {type(value).__name__} {value!r}")


def _check_values(header: dict, stream: dict, name: str | None) -> None:
    """Values the types allow but a stream cannot have (sizes bounded so that no header
    costs more to check than a real one)."""
    for key in ("name", "type", "source_id"):
        if len(stream[key]) > MAX_TEXT:
            raise WireError(name, f"stream.{key}", f"{len(stream[key])} "
                            f"characters; at most {MAX_TEXT}")
    for key in ("channels", "units"):
        if len(stream[key]) > MAX_CHANNELS or any(len(x) > MAX_TEXT for x in stream[key]):
            raise WireError(name, f"stream.{key}", f"at most {MAX_CHANNELS} labels of at most "
                            f"{MAX_TEXT} characters")
    trace = header.get("trace", [])
    if isinstance(trace, list) and len(trace) > MAX_TRACE:
        raise WireError(name, "trace", f"{len(trace)} stages; at most {MAX_TRACE}")
    if stream["dtype"] != STRING and stream["dtype"] not in DTYPES:
        raise WireError(name, "stream.dtype", f"unknown dtype {stream['dtype']!r}; expected "
                        f"one of {', '.join(DTYPES)} or {STRING!r}")
    rate = stream["rate"]
    if rate != 0 and not MIN_RATE <= rate <= MAX_RATE:
        raise WireError(name, "stream.rate", f"expected 0 (irregular) or a rate from "
                        f"{MIN_RATE:g} to {MAX_RATE:g} Hz, got {rate!r}")
    if not 0 <= header["seq"] < MAX_SEQ:
        raise WireError(name, "seq", f"expected 0 <= seq < 2**63, got {header['seq']!r}")


def _check_layout(header: dict, name: str | None) -> None:
    dtype, shape = header["dtype"], header["shape"]
    if dtype != STRING and dtype not in DTYPES:
        raise WireError(name, "dtype", f"unknown dtype {dtype!r}; expected one of "
                        f"{', '.join(DTYPES)} or {STRING!r}")
    if not shape or len(shape) > MAX_DIMS or not all(
            isinstance(n, int) and not isinstance(n, bool) and 0 <= n < MAX_SIZE for n in shape):
        raise WireError(name, "shape", f"expected 1 to {MAX_DIMS} sizes from 0 to 2**32 - 1, "
                        f"got {shape!r}")
    if math.prod(shape[1:]) >= MAX_SIZE:
        raise WireError(name, "shape", f"a sample of {math.prod(shape[1:])} values "
                        f"({shape!r}); at most 2**32 - 1")
    if shape[0] and not math.prod(shape[1:]):  # samples of nothing: no payload backs the count
        raise WireError(name, "shape", f"{shape[0]} samples of zero values each ({shape!r})")
    trace = header.get("trace", [])
    if not isinstance(trace, list) or not all(
            isinstance(e, list) and len(e) == 3 and isinstance(e[0], str)
            and all(_is_time(t) for t in e[1:]) for e in trace):
        raise WireError(name, "trace", "expected an array of [stage, enter, exit] with finite "
                        "times")
    if "timestamps" in header:
        stamps = header["timestamps"]
        if not isinstance(stamps, list) or not all(_is_time(t) for t in stamps):
            raise WireError(name, "timestamps", "expected an array of finite numbers")
        if len(stamps) != shape[0]:
            raise WireError(name, "timestamps", f"{len(stamps)} timestamps for {shape[0]} "
                            f"samples (shape {shape})")
        return
    for key in ("t0", "rate"):
        if key not in header:
            raise WireError(name, key, "missing (give either 'timestamps' or 't0' and 'rate')")
        if not _is_time(header[key]):
            raise WireError(name, key, f"expected a finite number, got {header[key]!r}")
    if not MIN_RATE <= header["rate"] <= MAX_RATE:
        raise WireError(name, "rate", f"must be from {MIN_RATE:g} to {MAX_RATE:g} Hz with "
                        f"'t0', got {header['rate']!r}")
    last = header["t0"] + max(shape[0] - 1, 0) / header["rate"]
    if not math.isfinite(last) or abs(last) > MAX_TIME:
        raise WireError(name, "rate", f"t0 {header['t0']!r} + {shape[0]} samples at "
                        f"{header['rate']!r} Hz ends at {last!r} s, not a time")


def _is_time(value: Any) -> bool:
    """A finite number of seconds within what a float64 clock can mean (|t| < 1e12 s)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) <= MAX_TIME)


def _kind_name(kind: type | tuple) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "int", float: "float", str: "str", bool: "bool", list: "array", dict: "map"}
    return " or ".join(names[k] for k in kinds)


def _decode_strings(payload: memoryview, shape: tuple[int, ...], name: str) -> np.ndarray:
    try:
        nested = msgpack.unpackb(payload)
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise WireError(name, "payload", f"string payload is not msgpack ({exc})") from None
    if not _fits(nested, shape):  # before any allocation: the shape is only declared
        raise WireError(name, "payload", f"string payload does not match shape {list(shape)} "
                        "(expected nested arrays of str, one level per dimension)")
    data = np.empty(shape, dtype=object)
    if data.size:
        data[...] = nested
    return data


def _fits(nested: Any, shape: tuple[int, ...]) -> bool:
    if not shape:
        return isinstance(nested, str)
    return (isinstance(nested, list) and len(nested) == shape[0]
            and all(_fits(item, shape[1:]) for item in nested))


def _timestamps(header: dict, n: int) -> np.ndarray:
    if "timestamps" in header:
        return np.asarray(header["timestamps"], dtype=np.float64)
    return header["t0"] + np.arange(n) / header["rate"]


def _info(header: dict) -> StreamInfo:
    s = header["stream"]
    return StreamInfo(name=s["name"], type=s["type"], channels=tuple(s["channels"]),
                      units=tuple(s["units"]), rate=float(s["rate"]), dtype=s["dtype"],
                      source_id=s["source_id"])
