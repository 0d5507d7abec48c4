"""How reports look in a terminal: rich tables of latency, counts and drops."""
from __future__ import annotations

from rich.table import Table


def report_table(report: dict, title: str | None = None) -> Table:
    name = title or f"pipeline {report.get('pipeline', '')}"
    table = Table(title=f"{name} (latency in ms)", title_justify="left")
    for col in ("stage", "p50", "p90", "p99", "max", "chunks", "dropped", "bad"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    for name, node in report["nodes"].items():
        table.add_row(name, *(f"{node[k]:.3f}" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
                      str(node["processed"]), str(node["dropped"]), str(node["quarantined"]))
    e2e = report["end_to_end"]
    table.add_row("[bold]end-to-end[/bold]",
                  *(f"[bold]{e2e[k]:.3f}[/bold]" for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")),
                  str(e2e["count"]), str(report["dropped"]), "", end_section=True)
    return table


def results_table(result: dict) -> Table:
    """`evaluate` results: one row per variant, a column per metric the result lists under
    `columns` (all of them when it lists none); accuracies in %."""
    rows = {variant: _flat(scores) for variant, scores in result["results"].items()}
    metrics = result.get("columns") or list(dict.fromkeys(m for s in rows.values() for m in s))
    table = Table(title=f"{result['method']}: evaluation", title_justify="left")
    table.add_column("variant")
    for m in metrics:
        table.add_column(m.replace("_", " "), justify="right")
    for variant, scores in rows.items():
        table.add_row(variant, *(_cell(m, scores.get(m)) for m in metrics))
    return table


def _flat(scores: dict, prefix: str = "") -> dict:
    """{"severe": {"f1": x}} -> {"severe_f1": x}."""
    out = {}
    for key, value in scores.items():
        name = f"{prefix}{key}"
        out.update(_flat(value, f"{name}_") if isinstance(value, dict) else {name: value})
    return out


def _cell(metric: str, value) -> str:
    if value is None:
        return ""
    if "accuracy" in metric:
        return f"{100 * value:.1f}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)
