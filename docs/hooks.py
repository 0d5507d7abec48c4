"""MkDocs hook: pages say `<!-- nodes -->`, `<!-- results FILE.json -->` or `<!-- batch
FILE.json METRICS -->` and get a table made from the code or from the JSON that `edgert
evaluate`, `bench` or `batch` wrote, so the docs cannot drift from either."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import UnionType
from typing import Annotated, Literal, Union, get_args, get_origin

RESULTS = Path(__file__).parent / "results"
MARK = re.compile(r"<!-- (nodes|results ([\w./-]+)(?: ([\w./]+)(?: ([\w,]+))?)?"
                  r"|batch ([\w./-]+) ([\w.,]+)(?: where ([\w=.,]+))?) -->")
METHOD_NODES = ("edgert.methods.btta_dg.node:EuclideanAlign", "edgert.methods.btta_dg.node:Adapt",
                "edgert.methods.cogmoe.node:Stage1", "edgert.methods.bolt.node:Answer",
                "edgert.methods.avde.node:Retrieve", "edgert.methods.avde.node:Generate",
                "edgert.methods.janusvln.node:Navigate")


def on_page_markdown(markdown: str, page, config, files) -> str:
    return MARK.sub(_expand, markdown)


def _expand(m: re.Match) -> str:
    if m.group(1) == "nodes":
        return nodes()
    if m.group(5):
        return batch(m.group(5), m.group(6).split(","), m.group(7))
    return results(m.group(2), m.group(3), m.group(4).split(",") if m.group(4) else None)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return "" if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows])


def nodes() -> str:
    """One section per node: what it does (its docstring) and its parameters (pydantic)."""
    from edgert.runtime.registry import BUILTIN, node_class

    out = []
    for name in list(BUILTIN) + list(METHOD_NODES):
        cls = node_class(name)
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        rows = []
        for field, info in cls.Params.model_fields.items():
            default = "required" if info.is_required() else repr(info.default)
            rows.append([f"`{field}`", f"`{_type(info.annotation)}`", f"`{default}`",
                         info.description or ""])
        ports = f"inputs {', '.join(cls.inputs) or '-'}; outputs {', '.join(cls.outputs) or '-'}"
        table = _table(["field", "type", "default", "meaning"], rows) if rows else "No fields."
        out.append(f"### `{name}`\n\n{doc}\n\n{ports}.\n\n{table}\n")
    return "\n".join(out)


def _type(annotation) -> str:
    """`str`, `list[str] or None`, `one of 'sub', 'pull'`: readable, and without `|`, which
    would split a table cell."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin in (Union, UnionType):
        return " or ".join(_type(a) for a in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_type(a) for a in args)}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__",
                                                            str(annotation))


def _scalars(metrics: dict, prefix: str = "") -> dict:
    """Nested metrics flattened to `level metric` columns (CogMoE's per-level F1)."""
    flat = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update(_scalars(value, f"{prefix}{key}_"))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[f"{prefix}{key}"] = value
    return flat


def results(name: str, key: str | None = None, only: list[str] | None = None) -> str:
    """A table of a saved JSON: of its `results` (one row per variant, in its `columns`), or
    of the part at `key` (a.b.c): one row per entry when its entries are maps or it is a list
    of them (the columns `only` lists, if given), else one row per number."""
    path = RESULTS / name
    if not path.exists():
        return f"*No results saved yet: `{path.name}` is made by the command above.*"
    saved = json.loads(path.read_text())
    part = saved.get("results", saved) if key is None else saved
    for step in (key.split(".") if key else []):
        if step not in part:
            return f"*`docs/results/{name}` has no `{key}` yet: the command above makes it.*"
        part = part[step]
    note = f"\n\n*Generated from `docs/results/{name}`{f', {key}' if key else ''}.*"
    if isinstance(part, list):  # points of a curve: one row each, named by its strings
        flat = [{k: v for k, v in p.items() if isinstance(v, str)} | _scalars(p) for p in part]
        columns = list(dict.fromkeys(c for row in flat for c in row))
        return _table(columns, [[row.get(c) for c in columns] for row in flat]) + note
    if part and all(isinstance(v, dict) for v in part.values()):
        flat = {row: _scalars(m) for row, m in part.items()}
        columns = list(dict.fromkeys(c for row in flat.values() for c in row))
        if key is None and saved.get("columns"):
            columns = [c for c in saved["columns"] if c in columns]
        if only:
            columns = [c for c in only if c in columns]
        rows = [[f"`{row}`"] + [values.get(c) for c in columns] for row, values in flat.items()]
        return _table([""] + columns, rows) + note
    flat = _scalars(part)
    return _table(["measure", "value"], [[k, v] for k, v in flat.items()]) + note


def batch(name: str, metrics: list[str], where: str | None = None) -> str:
    """A table of a batch job's results (the `summary` of `edgert batch`'s results.json): one
    row per config, named by the config fields that differ between configs, each metric as
    mean ± standard error over seeds; `where` (field=value,...) keeps matching configs."""
    path = RESULTS / name
    if not path.exists():
        return f"*No results saved yet: `{path.name}` is made by the command above.*"
    saved = json.loads(path.read_text())
    entries = list(saved["summary"].values())
    for cond in (where.split(",") if where else []):
        field, _, value = cond.partition("=")
        entries = [e for e in entries if str(e["config"].get(field)) == value]
    fields = [f for f in entries[0]["config"] if len({str(e["config"][f]) for e in entries}) > 1] \
        if entries else []
    rows = []
    for e in entries:
        cells = [e["config"][f] for f in fields]
        for metric in metrics:
            stat = e["metrics"].get(metric)
            cells.append("" if stat is None else f"{stat['mean']:.4g} ± {stat['se']:.2g}")
        rows.append(cells)
    seeds = max((s["n"] for e in entries for s in e["metrics"].values()), default=0)
    note = (f"\n\n*Generated from `docs/results/{name}`: mean ± standard error over {seeds} "
            f"seeds{f', configs with {where}' if where else ''}.*")
    return _table(fields + metrics, rows) + note
