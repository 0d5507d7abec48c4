"""`edgert bench`: run the suites, keep results.json current after each, then write report.md.

Every suite is a function `run_X(quick, out_dir, progress, ...) -> {"config", "results"}`;
`progress` is a rich Progress the suite adds its own task to. A suite that fails is recorded
with its error and the others still run, so a long run never loses what it measured.
"""
from __future__ import annotations

import json
import logging
import os
import platform
import time
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from edgert.runtime.progress import progress_bar as plain_or_bar

log = logging.getLogger(__name__)

SUITES = ("transport", "inference", "pipelines", "scenarios", "reliability")
PACKAGES = ("edgert", "numpy", "onnxruntime", "onnxruntime-gpu", "torch", "pylsl", "pyzmq")


def machine() -> dict:
    """What the figures were measured on."""
    from edgert.devices.detect import detect

    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    try:
        import pylsl
        versions["liblsl"] = str(pylsl.library_version())
    except (ImportError, RuntimeError):
        versions["liblsl"] = None
    return {"device": detect().to_dict(), "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "versions": versions}


def run_suite(name: str, quick: bool, out_dir: Path, progress: Progress | None,
              bundles: list[Path] | None = None) -> dict:
    """One suite's results, or {"skipped": why} when it cannot run here."""
    if name == "transport":
        from edgert.benchmarks.transport import run_transport
        return headline(run_transport(quick, out_dir, progress=progress))
    if name == "inference":
        from edgert.benchmarks.inference import run_inference
        return run_inference(quick, out_dir, progress, bundles=bundles)
    if name == "pipelines":
        from edgert.benchmarks.pipelines import run_pipelines
        return run_pipelines(quick, out_dir, progress)
    if name == "reliability":
        from edgert.benchmarks.reliability import run_reliability
        return run_reliability(quick, out_dir, progress)
    from edgert.benchmarks.scenarios import run_scenarios
    return run_scenarios(quick, out_dir, progress)


def headline(transport: dict) -> dict:
    """transport.<variant>.<figure> for the first stream measured (22 x 250 Hz in chunks of 1),
    as results.json promises, beside every stream's figures under `results`."""
    results = transport["results"]
    first = next(iter(results), None)
    return {**transport, "headline_stream": first, **(results[first] if first else {})}


def progress_bar(console: Console | None):
    return plain_or_bar(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=console)


def run_bench(suites: list[str], quick: bool, out_dir: Path,
              bundles: list[Path] | None = None, console: Console | None = None) -> dict:
    """Run `suites` (names from SUITES) into out_dir: results.json, report.md and PNGs."""
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {unknown}; choose from {', '.join(SUITES)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict = {"machine": machine(), "quick": quick, "suites": list(suites),
                     "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "wall_s": {}, "failed": []}
    with progress_bar(console) as progress:
        for name in suites:
            t0 = time.monotonic()
            try:
                results[name] = run_suite(name, quick, out_dir, progress, bundles)
            except Exception as e:
                log.exception("suite %s failed", name)
                results[name] = {"skipped": f"failed: {type(e).__name__}: {e}"}
                results["failed"].append(name)
            results["wall_s"][name] = round(time.monotonic() - t0, 1)
            write_json(out_dir / "results.json", results)
    from edgert.benchmarks.report import write_report

    write_report(results, out_dir)
    return results


def write_json(path: Path, payload: dict) -> None:
    """Written whole to a temporary name, then renamed: never a half-written file."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)
