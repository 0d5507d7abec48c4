"""Write a small GDF 1.25 file (the BCI Competition IV 2a format): float32 samples in
1-s records, and an event table of (sample, type) pairs, laid out as the GDF 1 spec says."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def _text(value: str, size: int) -> bytes:
    return value.encode("latin-1")[:size].ljust(size, b" ")


def write_gdf(path: Path, data: np.ndarray, rate: int, channels: list[str],
              events: list[tuple[int, int]]) -> None:
    """`data` is samples x channels in uV; `events` are (0-based sample, event type)."""
    n, ns = data.shape
    records = int(np.ceil(n / rate))
    padded = np.zeros((records * rate, ns), np.float32)
    padded[:n] = data
    header = bytearray()
    header += b"GDF 1.25" + _text("X X", 80) + _text("edgert test", 80)
    header += _text("20260101120000" + "00", 16)
    header += np.int64(256 * (ns + 1)).tobytes() + bytes(24) + bytes(20)
    header += np.int64(records).tobytes() + np.array([1, 1], np.uint32).tobytes()
    header += np.uint32(ns).tobytes()
    header += b"".join(_text(c, 16) for c in channels)
    header += _text("", 80) * ns + _text("uV", 8) * ns
    header += np.full(ns, -1e6).tobytes() + np.full(ns, 1e6).tobytes()
    header += np.full(ns, -1e6, np.int64).tobytes() + np.full(ns, 1e6, np.int64).tobytes()
    header += _text("", 80) * ns
    header += np.full(ns, rate, np.int32).tobytes() + np.full(ns, 16, np.int32).tobytes()
    header += bytes(32 * ns)
    assert len(header) == 256 * (ns + 1)
    body = b"".join(padded[r * rate:(r + 1) * rate].T.astype("<f4").tobytes()
                    for r in range(records))
    pos = np.array([s + 1 for s, _ in events], np.uint32)
    typ = np.array([t for _, t in events], np.uint16)
    table = (bytes([1]) + int(rate).to_bytes(3, "little") + np.uint32(len(events)).tobytes()
             + pos.tobytes() + typ.tobytes())
    Path(path).write_bytes(bytes(header) + body + table)
