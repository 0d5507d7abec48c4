"""The transport results as a terminal table: what each variant adds over its raw hop."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from runtime.bench.transport import ZMQ_VARIANTS


def baseline(variant: str) -> str:
    """The raw hop of the variant's transport, which the variant is compared with."""
    return "raw_pyzmq" if variant in ZMQ_VARIANTS else "raw_pylsl"


def table(report: dict) -> Table:
    t = Table(title="Transport hop latency (median of repeats); added = variant - raw hop "
              "of its transport", title_justify="left")
    for col in ("stream", "chunk", "variant", "p50 ms", "p90 ms", "p99 ms", "max ms",
                "added p50", "added p99", "cpu %", "lost", "units"):
        t.add_column(col, justify="left" if col in ("stream", "variant") else "right")
    for key, variants in report["results"].items():
        stream, chunk = key.rsplit("/chunk", 1)
        for variant, r in variants.items():
            t.add_row(stream, chunk, variant, *_cells(variant, r, variants))
        t.add_section()
    return t


def _cells(variant: str, r: dict, variants: dict) -> list[str]:
    if "skipped" in r:
        return [f"[dim]skipped: {escape(r['skipped'][:160])}[/dim]"] + [""] * 8
    base = variants.get(baseline(variant), {})
    added = variant != baseline(variant) and "p50_ms" in base
    return [f"{r['p50_ms']:.3f}", f"{r['p90_ms']:.3f}", f"{r['p99_ms']:.3f}",
            f"{r['max_ms']:.3f}",
            f"{r['p50_ms'] - base['p50_ms']:+.3f}" if added else "",
            f"{r['p99_ms'] - base['p99_ms']:+.3f}" if added else "",
            f"{r['cpu_percent']:.1f}", f"{r['lost']:.0f}", f"{r['units']:.0f}"]
