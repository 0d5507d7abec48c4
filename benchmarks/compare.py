"""Compare two results.json files figure by figure, for CI: NEW/OLD ratios and regressions.

A figure is a number under a dict key (lists such as samples are not figures) outside
`machine` and every `config`. Latency figures end in `_ms`, throughput figures in `_qps` or
`_per_s`. `max_ms` is left out: it is one sample, too noisy to gate a build on. A latency
regresses when NEW/OLD > 1 + threshold, a throughput when NEW/OLD < 1 - threshold.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SKIP = {"machine", "config"}


@dataclass(frozen=True)
class Row:
    figure: str
    kind: str  # "latency" or "throughput"
    old: float
    new: float
    ratio: float | None
    regression: bool


def kind_of(key: str) -> str | None:
    if key.endswith("_ms") and not key.startswith("max"):
        return "latency"
    if key.endswith(("_qps", "_per_s")):
        return "throughput"
    return None


def figures(results: dict, prefix: str = "") -> dict[str, tuple[str, float]]:
    """{dotted path: (kind, value)} for every latency and throughput figure (the path leaves
    out "results", which every suite has)."""
    out = {}
    for key, value in results.items():
        path = f"{prefix}{key}"
        if key in SKIP:
            continue
        if isinstance(value, dict):
            out.update(figures(value, prefix if key == "results" else f"{path}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            kind = kind_of(key)
            if kind:
                out[path] = (kind, float(value))
    return out


def compare(old: dict, new: dict, threshold: float = 0.1) -> list[Row]:
    """A row for every figure both results have, in NEW's order."""
    before = figures(old)
    rows = []
    for path, (kind, value) in figures(new).items():
        if path not in before:
            continue
        was = before[path][1]
        ratio = value / was if was > 0 else None
        regression = ratio is not None and (ratio > 1 + threshold if kind == "latency"
                                            else ratio < 1 - threshold)
        rows.append(Row(path, kind, was, value, ratio, regression))
    return rows


def compare_files(old: Path, new: Path, threshold: float = 0.1) -> list[Row]:
    """`compare` on two results.json files; a missing or bad file raises ValueError."""
    return compare(load(old), load(new), threshold)


def load(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from None
