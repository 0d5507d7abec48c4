"""Read XDF recordings (LabRecorder's or ours) into numpy arrays, through pyxdf."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pyxdf

from edgert.streams.chunk import STRING, StreamInfo

DTYPES = {"double64": "float64", "float32": "float32", "string": STRING, "int32": "int32",
          "int16": "int16", "int8": "int8", "int64": "int64"}



class _Benign(logging.Filter):
    """pyxdf's per-file progress lines, and its note on files without clock-offset chunks
    (short recordings, files written here), tell a user nothing to act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Segments and clock-segments differ" not in record.getMessage()


logging.getLogger("pyxdf").setLevel(logging.WARNING)
logging.getLogger("pyxdf.pyxdf").addFilter(_Benign())


class XdfReadError(ValueError):
    """An XDF file that pyxdf could not read."""


@dataclass
class Recording:
    """One recorded stream: `data` is samples x channels (an object array of str for string
    streams), `timestamps` float64 seconds, `clock_offsets` rows of (collection time, offset)."""

    info: StreamInfo
    data: np.ndarray
    timestamps: np.ndarray
    clock_offsets: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))

    def __len__(self) -> int:
        return len(self.timestamps)

    def window(self, start: float, stop: float) -> "Recording":
        """The samples with start <= timestamp < stop (e.g. a short excerpt to replay)."""
        keep = (self.timestamps >= start) & (self.timestamps < stop)
        return replace(self, data=self.data[keep], timestamps=self.timestamps[keep])


def read_xdf(path: str | os.PathLike, sync: bool = True,
             dejitter: bool = False) -> list[Recording]:
    """Every stream of an XDF file, in file order.

    `sync` maps timestamps into the recorder's clock with the file's clock offsets (and
    handles clock resets, as pyxdf does); `dejitter` is off by default so that replays keep
    the timestamps the device really produced.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"XDF file {path} not found")
    try:
        streams, _ = pyxdf.load_xdf(str(path), synchronize_clocks=sync,
                                    dejitter_timestamps=dejitter)
    except Exception as e:
        raise XdfReadError(f"cannot read XDF file {path}: {type(e).__name__}: {e}; check that "
                           f"it is an XDF recording (it starts with 'XDF:') and not cut inside "
                           f"its headers") from e
    return [_recording(stream) for stream in streams]



def _first(fields: dict, key: str, default: str = "") -> str:
    values = fields.get(key) or [None]
    return default if values[0] is None else str(values[0])


def _channels(info: dict, n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Labels and units from desc/channels/channel, or ch0.. when they are missing."""
    desc = (info.get("desc") or [None])[0] or {}
    channels = (desc.get("channels") or [None])[0] or {}
    entries = [entry or {} for entry in channels.get("channel") or []]
    labels = tuple(_first(entry, "label") for entry in entries)
    units = tuple(_first(entry, "unit") for entry in entries)
    if len(labels) != n or not all(labels):
        return tuple(f"ch{i}" for i in range(n)), ()
    return labels, units if any(units) else ()


def _info(header: dict) -> StreamInfo:
    n = int(_first(header, "channel_count", "1"))
    fmt = _first(header, "channel_format")
    if fmt not in DTYPES:
        raise XdfReadError(f"stream {_first(header, 'name')!r} has channel_format {fmt!r}; "
                           f"XDF defines {sorted(DTYPES)}")
    labels, units = _channels(header, n)
    return StreamInfo(name=_first(header, "name"), type=_first(header, "type"),
                      channels=labels, units=units,
                      rate=float(_first(header, "nominal_srate", "0")),
                      dtype=DTYPES[fmt], source_id=_first(header, "source_id"))


def _recording(stream: dict) -> Recording:
    info = _info(stream["info"])
    n = max(info.n_channels, 1)
    stamps = np.asarray(stream["time_stamps"], dtype=np.float64)
    if info.dtype == STRING:
        data = np.empty((len(stamps), n), dtype=object)
        if len(stamps):
            data[:] = stream["time_series"]
    else:
        data = np.asarray(stream["time_series"], dtype=info.dtype).reshape(len(stamps), n)
    offsets = np.column_stack([np.asarray(stream["clock_times"], dtype=np.float64),
                               np.asarray(stream["clock_values"], dtype=np.float64)])
    return Recording(info=info, data=data, timestamps=stamps, clock_offsets=offsets)
