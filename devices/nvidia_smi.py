"""nvidia-smi's CSV output (`--format=csv,noheader,nounits`), shared by detection and telemetry."""
from __future__ import annotations

MISSING = ("[N/A]", "[Not Supported]", "N/A", "")


def rows(text: str, n_fields: int) -> list[list[str | None]]:
    """One list of fields per GPU line; fields nvidia-smi cannot report ([N/A]) become None.

    The first field may itself contain commas (a GPU name), so lines are split from the right.
    """
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.rsplit(",", n_fields - 1)]
        if len(fields) != n_fields:
            raise ValueError(f"nvidia-smi line has {len(fields)} fields, expected {n_fields}: "
                             f"{line!r}")
        out.append([None if f in MISSING else f for f in fields])
    return out


def number(field: str | None) -> float | None:
    return None if field is None else float(field)
