"""The unit of data on every wire and edge: a block of samples with per-sample timestamps."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

STRING = "string"


@dataclass(frozen=True)
class StreamInfo:
    """What a stream is: enough to open an LSL outlet or write an XDF header for it."""

    name: str
    type: str = ""
    channels: tuple[str, ...] = ()
    units: tuple[str, ...] = ()
    rate: float = 0.0
    dtype: str = "float32"
    source_id: str = ""

    @property
    def n_channels(self) -> int:
        return len(self.channels)

    @property
    def irregular(self) -> bool:
        return self.rate <= 0

    @classmethod
    def make(cls, name: str, n_channels: int, **kw) -> "StreamInfo":
        """Info with default channel names ch0..chN-1 (and units if not given)."""
        channels = tuple(kw.pop("channels", None) or (f"ch{i}" for i in range(n_channels)))
        units = tuple(kw.pop("units", ()))
        return cls(name=name, channels=channels, units=units, **kw)


@dataclass
class Chunk:
    """A block of samples, samples first, timestamps in LSL's local_clock (one per sample).

    `trace` holds (stage, enter, exit) times in the same clock, appended by every stage the
    chunk passes; `gap` marks a discontinuity (source reconnect, clock reset) before it.
    """

    data: np.ndarray
    timestamps: np.ndarray
    info: StreamInfo
    seq: int = 0
    trace: list[tuple[str, float, float]] = field(default_factory=list)
    gap: bool = False

    def __len__(self) -> int:
        return len(self.timestamps)

    @property
    def is_string(self) -> bool:
        return self.info.dtype == STRING

    def derive(self, data: np.ndarray, timestamps: np.ndarray | None = None,
               info: StreamInfo | None = None) -> "Chunk":
        """A new chunk computed from this one: same seq, gap flag and a copy of the trace."""
        return replace(self, data=data,
                       timestamps=self.timestamps if timestamps is None else timestamps,
                       info=info or self.info, trace=list(self.trace))
