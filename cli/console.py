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
    scored = [f"{name}: online accuracy {n['correct']}/{n['scored']} "
              f"({n['online_accuracy']:.0%})" for name, n in report["nodes"].items()
              if n.get("scored")]
    if scored:
        table.caption, table.caption_justify = "; ".join(scored), "left"
    return table


def results_table(result: dict) -> Table:
    """`evaluate` results: one row per variant, a column per metric the result lists under
    `columns` (all of them when it lists none); accuracies in %."""
    rows = {variant: _flat(scores) for variant, scores in result["results"].items()}
    metrics = result.get("columns") or list(dict.fromkeys(m for s in rows.values() for m in s))
    table = Table(title=f"{result['method']}: evaluation", title_justify="left")
    table.add_column("variant", no_wrap=True, min_width=max(map(len, rows), default=7))
    for m in metrics:
        table.add_column(m.replace("_", " "), justify="right")
    for variant, scores in rows.items():
        table.add_row(variant, *(_cell(m, scores.get(m)) for m in metrics))
    return table


LEADS = {"gaps": "lead in F1 over each baseline (90 % interval)",
         "widening": "lead in F1 minus the lead on clean data (90 % interval)"}


def gaps_table(result: dict, key: str = "gaps") -> Table | None:
    """`evaluate`'s `gaps` ({baseline: {level: {f1, ci90}}}: the method's F1 minus each
    baseline's, with the 90 % interval), or another result of that shape named in `LEADS`,
    a row per baseline; None when the result has no such key."""
    gaps = result.get(key)
    if not gaps:
        return None
    levels = list(dict.fromkeys(level for row in gaps.values() for level in row))
    table = Table(title=f"{result['method']}: {LEADS[key]}", title_justify="left")
    table.add_column("baseline", no_wrap=True, min_width=max(map(len, gaps)))
    for level in levels:
        table.add_column(level, justify="right")
    for baseline, row in gaps.items():
        table.add_row(baseline, *(f"{row[lv]['f1']:+.3f}\n[{row[lv]['ci90'][0]:+.3f}, "
                                  f"{row[lv]['ci90'][1]:+.3f}]" if lv in row else ""
                                  for lv in levels))
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
    if not isinstance(value, float):
        return str(value)
    return f"{value:.3f}" if 0.01 <= abs(value) < 1000 else f"{value:.3g}"
