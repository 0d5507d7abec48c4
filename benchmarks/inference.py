"""Every exported bundle under ONNX Runtime (fp32, fp16, int8) against torch eager, one run.

Usage: python benchmarks/inference.py [--bundles DIR ...] [--queries N] [--threads N] [--out FILE]
Without --bundles it exports the reference EEG decoder (ShallowConvNet-sized) first.
Prints single-stream latency at batch 1, ONNX Runtime over torch eager as a speed-up, and
each variant against fp32, all measured in this process, one after the other.
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from export.bundle import Bundle
from export.reference import export_reference
from runtime.bench_model import bench_model


def measure(path: Path, queries: int, threads: int) -> dict:
    """p50/p99 for torch eager and every ONNX variant of one bundle."""
    variants = list(Bundle.load(path).manifest.variants)
    rows = {"torch": bench_model(str(path), ["torch"], queries=queries,
                                 threads=threads)["results"]["torch"]}
    for variant in variants:
        rows[f"ort-{variant}"] = bench_model(str(path), ["ort-cpu"], queries=queries,
                                             variant=variant,
                                             threads=threads)["results"]["ort-cpu"]
    return rows


def table(name: str, rows: dict) -> Table:
    t = Table(title=f"{name}: single-stream, batch 1", title_justify="left")
    for col in ("engine", "p50 ms", "p99 ms", "torch / this (p50)", "fp32 / this (p50)"):
        t.add_column(col, justify="left" if col == "engine" else "right")
    torch_p50 = rows["torch"]["p50_ms"]
    fp32_p50 = rows["ort-fp32"]["p50_ms"]
    for engine, r in rows.items():
        t.add_row(engine, f"{r['p50_ms']:.3f}", f"{r['p99_ms']:.3f}",
                  f"{torch_p50 / r['p50_ms']:.2f}x",
                  f"{fp32_p50 / r['p50_ms']:.2f}x" if engine.startswith("ort") else "")
    return t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundles", type=Path, nargs="*")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        paths = args.bundles or [export_reference(Path(tmp) / "reference", fp16=True,
                                                  int8=True).path]
        results = {}
        for path in paths:
            name = Bundle.load(path).manifest.name
            results[name] = measure(path, args.queries, args.threads)
            console.print(table(name, results[name]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"queries": args.queries, "threads": args.threads,
                                        "results": results}, indent=2))


if __name__ == "__main__":
    main()
