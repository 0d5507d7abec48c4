"""The transport results as a terminal table: what each middle adds to the hop."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table


def table(report: dict) -> Table:
    t = Table(title="Transport hop latency (median of repeats); added = per chunk, receipt "
              "through the middle minus direct receipt of the same chunk in the same run",
              title_justify="left")
    for col in ("stream", "chunk", "variant", "p50 ms", "p90 ms", "p99 ms", "max ms",
                "added p50", "added p99", "cpu %", "lost", "units"):
        t.add_column(col, justify="left" if col in ("stream", "variant") else "right")
    for key, variants in report["results"].items():
        stream, chunk = key.rsplit("/chunk", 1)
        for variant, r in variants.items():
            t.add_row(stream, chunk, variant, *_cells(r))
        t.add_section()
    return t


def _cells(r: dict) -> list[str]:
    if "skipped" in r:
        return [f"[dim]skipped: {escape(r['skipped'][:160])}[/dim]"] + [""] * 8
    added = r.get("added")
    return [f"{r['p50_ms']:.3f}", f"{r['p90_ms']:.3f}", f"{r['p99_ms']:.3f}",
            f"{r['max_ms']:.3f}",
            f"{added['p50_ms']:+.3f}" if added else "",
            f"{added['p99_ms']:+.3f}" if added else "",
            f"{r['cpu_percent']:.1f}", f"{r['lost']:.0f}", f"{r['units']:.0f}"]
