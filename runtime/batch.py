"""`edgert batch`: a job's (config, seed) grid over a process pool or a Ray cluster.

A job is a method of kind `batch`: `run(config, seed, out_dir) -> {metric: number}` writes its
artifacts (figures, tables) into `out_dir` and returns its metrics; `grid(quick)` gives the
default configs; `config` (a pydantic model) validates a user's. Every finished cell is saved
as `DIR/cells/<key>.json` at once, keyed by job, config hash and seed, so a rerun skips it; a
cell that raises is saved with its traceback and reported, and the others go on.
"""
from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgert.runtime.plugin import DataError
from edgert.runtime.methods import find


@dataclass(frozen=True)
class Cell:
    job: str
    config: dict
    seed: int

    @property
    def config_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()[:12]

    @property
    def key(self) -> str:
        return f"{self.job.replace(':', '.')}-{self.config_hash}-s{self.seed}"


def run_cell(cell: Cell, out: str) -> dict:
    """Run one cell (in a worker process or a Ray task); never raises. A cell refused for its
    data keeps the one-line reason, a cell that breaks keeps its traceback."""
    folder = Path(out) / "cells" / cell.key
    folder.mkdir(parents=True, exist_ok=True)
    record = asdict(cell) | {"key": cell.key, "config_hash": cell.config_hash}
    try:
        metrics = find(cell.job).run(cell.config, cell.seed, folder)
        record["metrics"] = {k: float(v) for k, v in metrics.items()}
        record["artifacts"] = sorted(str(p.relative_to(out)) for p in folder.iterdir())
    except DataError as e:  # the user's data or config: the message says how to fix it
        record["error"] = str(e)
    except Exception:
        record["error"] = traceback.format_exc()
    _write(Path(out) / "cells" / f"{cell.key}.json", record)
    return record


def _write(path: Path, payload: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)


def cells_for(job: str, configs: list[dict], seeds: int) -> list[Cell]:
    return [Cell(job, c, s) for c in configs for s in range(seeds)]


def pending(cells: list[Cell], out: Path) -> tuple[list[Cell], list[dict]]:
    """Cells still to run, and the saved records of those that finished without error."""
    todo, done = [], []
    for cell in cells:
        path = out / "cells" / f"{cell.key}.json"
        record = json.loads(path.read_text()) if path.exists() else None
        if record is not None and "error" not in record:
            done.append(record)
        else:
            todo.append(cell)
    return todo, done


def spawn_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """A process pool of `workers` (default: one per core). Spawn, not fork: the driver may
    hold threads (torch, rich) that fork would copy mid-lock."""
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count(),
                               mp_context=multiprocessing.get_context("spawn"))


def local_engine(cells: list[Cell], out: Path, workers: int | None = None) -> Iterable[dict]:
    with spawn_pool(workers) as pool:
        futures = [pool.submit(run_cell, cell, str(out)) for cell in cells]
        for future in as_completed(futures):
            yield future.result()


def ray_engine(cells: list[Cell], out: Path, address: str | None = None,
               cpus: int | None = None) -> Iterable[dict]:
    """Ray tasks, on the cluster at `address` or a local one of `cpus` CPUs; workers get the
    driver's import path, so they import jobs as it does."""
    try:
        import ray
    except ImportError:
        raise RuntimeError("the ray engine needs Ray: pip install -e '.[batch]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else (cpus or os.cpu_count()),
                 include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path
                                                                          if p)}})
    try:
        task = ray.remote(run_cell)
        waiting = [task.remote(cell, str(out)) for cell in cells]
        while waiting:
            ready, waiting = ray.wait(waiting, num_returns=1)
            yield ray.get(ready[0])
    finally:
        if started:
            ray.shutdown()


def summarize(records: list[dict]) -> dict[str, dict]:
    """Per config: mean and standard error over seeds of every metric."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["config_hash"], []).append(r)
    out = {}
    for h, rs in groups.items():
        names = sorted({m for r in rs for m in r["metrics"]})
        stats = {}
        for m in names:
            values = [r["metrics"][m] for r in rs if m in r["metrics"]]
            mean = sum(values) / len(values)
            var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 \
                else 0.0
            stats[m] = {"mean": mean, "se": math.sqrt(var / len(values)), "n": len(values)}
        out[h] = {"config": rs[0]["config"], "metrics": stats}
    return out


def markdown(job: str, summary: dict, failed: list[dict], records: list[dict]) -> str:
    lines = [f"# {job}", ""]
    for h, entry in summary.items():
        lines += [f"## config {h}", "", "```json", json.dumps(entry["config"], sort_keys=True),
                  "```", "", "| metric | mean | ± se | seeds |", "|---|---|---|---|"]
        lines += [f"| {m} | {s['mean']:.4g} | {s['se']:.2g} | {s['n']} |"
                  for m, s in entry["metrics"].items()]
        figures = sorted({a for r in records if r["config_hash"] == h
                          for a in r.get("artifacts", []) if a.endswith(".png")})
        lines += [""] + [f"![{Path(f).stem}]({f})" for f in figures] + [""]
    if failed:
        lines += ["## failed cells", ""]
        for r in failed:
            lines += [f"### {r['key']}", "", "```", r["error"].rstrip(), "```", ""]
    return "\n".join(lines)


def run_batch(job: str, configs: list[dict], seeds: int, out: Path, engine: str = "local",
              address: str | None = None, on_done: Callable[[dict], None] | None = None,
              workers: int | None = None) -> dict:
    """Run every pending cell, then write `out/results.json` and `out/summary.md`."""
    out = Path(out)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    todo, done = pending(cells_for(job, configs, seeds), out)
    runner = (local_engine(todo, out, workers) if engine == "local" else
              ray_engine(todo, out, address, workers))
    new = []
    for record in runner if todo else ():
        new.append(record)
        if on_done:
            on_done(record)
    finished = done + [r for r in new if "error" not in r]
    failed = [r for r in new if "error" in r]
    summary = summarize(finished)
    result: dict[str, Any] = {"job": job, "seeds": seeds, "engine": engine,
                              "skipped_as_done": len(done), "ran": len(new),
                              "failed": [{"key": r["key"], "error": r["error"]} for r in failed],
                              "summary": summary, "cells": finished}
    _write(out / "results.json", result)
    (out / "summary.md").write_text(markdown(job, summary, failed, finished))
    return result


def load_configs(job: Any, path: Path | None, quick: bool) -> list[dict]:
    """The job's configs: from a YAML/JSON file (one mapping, a list, or {configs: [...]}),
    each validated by the job's `config` model; else the job's own `grid(quick)`."""
    if path is None:
        return [dict(c) for c in job.grid(quick)]
    import yaml
    from pydantic import ValidationError

    raw = yaml.safe_load(Path(path).read_text())
    items = raw.get("configs", [raw]) if isinstance(raw, dict) else raw
    model = getattr(job, "config", None)
    out = []
    for i, item in enumerate(items):
        try:
            out.append(model(**item).model_dump() if model else dict(item))
        except (ValidationError, TypeError) as e:
            raise ValueError(f"{path}: config {i}: {e}") from None
    return out
