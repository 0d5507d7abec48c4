"""The report's figures as PNG files: latency CDFs, stages, latency over time, offered load.

Each function takes one suite's results and a path, draws what there is, and returns the
path, or None when the results hold nothing to draw (a skipped suite or variant).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on a board or in CI

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import NullFormatter  # noqa: E402


def _grid(n: int, width: float = 5.5, height: float = 3.6):
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _cdf(ax, series: dict[str, list[float]], title: str) -> None:
    for name, values in series.items():
        x = np.sort(np.asarray(values, dtype=float))
        ax.plot(x, np.arange(1, len(x) + 1) / len(x), label=f"{name} (n={len(x)})")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels on a log axis overlap
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of samples")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def _measured(group: dict, key: str) -> dict:
    return {name: r[key] for name, r in group.items()
            if isinstance(r, dict) and r.get(key)}


def cdfs(groups: dict[str, dict], path: Path) -> Path | None:
    """One CDF panel per group ({name: {variant: {"samples": [...]}}})."""
    panels = {title: _measured(group, "samples") for title, group in groups.items()}
    panels = {title: series for title, series in panels.items() if series}
    if not panels:
        return None
    fig, axes = _grid(len(panels))
    for ax, (title, series) in zip(axes, panels.items()):
        _cdf(ax, series, title)
    return _save(fig, path)


def over_time(groups: dict[str, dict], path: Path) -> Path | None:
    """One panel per group of latency against time since start ({"over_time": [[t, ms]]})."""
    panels = {title: _measured(group, "over_time") for title, group in groups.items()}
    panels = {title: series for title, series in panels.items() if series}
    if not panels:
        return None
    fig, axes = _grid(len(panels))
    for ax, (title, series) in zip(axes, panels.items()):
        for name, points in series.items():
            t, ms = np.asarray(points, dtype=float).T
            ax.plot(t, ms, ".", markersize=2, alpha=0.6, label=name)
        ax.set_yscale("log")
        ax.set_xlabel("time since start (s)")
        ax.set_ylabel("latency (ms, log scale)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, markerscale=4)
    return _save(fig, path)


def stages(pipelines: dict[str, dict], path: Path) -> Path | None:
    """Stacked bars: each pipeline's p50 per stage (the source's is transport in), beside its
    end-to-end p50."""
    runs = {name: r for name, r in pipelines.items() if "nodes" in r}
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(runs) + 3), 4.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    legend: dict[str, object] = {}
    for x, r in enumerate(runs.values()):
        bottom = 0.0
        for i, (node, figures) in enumerate(r["nodes"].items()):
            bar = ax.bar(x, figures["p50_ms"], bottom=bottom, color=colors[i % len(colors)],
                         edgecolor="white", width=0.6)
            legend.setdefault(node, bar)
            bottom += figures["p50_ms"]
        legend.setdefault("end to end", ax.plot([x - 0.35, x + 0.35],
                                                [r["end_to_end"]["p50_ms"]] * 2, "k--")[0])
    ax.set_xticks(range(len(runs)), list(runs), fontsize=9)
    ax.set_ylabel("p50 ms per chunk")
    ax.set_title("time per stage (p50, stacked)")
    ax.legend(legend.values(), legend.keys(), fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def offered_load(result: dict, path: Path) -> Path | None:
    """Throughput, p99 latency and drops against offered load, per edge policy."""
    points = result.get("points") or {}
    if not points:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for policy in ("block", "latest"):
        rows = sorted((p for p in points.values() if p["policy"] == policy),
                      key=lambda p: p["rate"])
        rate = [p["rate"] for p in rows]
        axes[0].plot(rate, [p["throughput_qps"] for p in rows], "o-", label=policy)
        axes[1].plot(rate, [np.nan if p["p99_ms"] is None else p["p99_ms"] for p in rows],
                     "o-", label=policy)
        axes[2].plot(rate, [p["dropped"] for p in rows], "o-", label=policy)
    top = max(p["rate"] for p in points.values())
    axes[0].plot([0, top], [0, top], ":", color="grey", label="offered")
    axes[0].axhline(result["saturation_qps"], ls="--", color="grey", label="saturation")
    for ax, ylabel in zip(axes, ("completed queries/s", "p99 latency (ms, log)", "dropped")):
        ax.set_xlabel("offered load (queries/s)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[1].set_yscale("log")
    fig.suptitle("throughput, latency and drops against offered load (Poisson arrivals)")
    return _save(fig, path)


def server_search(result: dict, bound_ms: float, path: Path) -> Path | None:
    """The server scenario's rate search: p99 at each rate tried, against the bound."""
    steps = result.get("steps") or []
    if not steps:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for met in (True, False):
        chosen = [s for s in steps if s["met"] == met]
        ax.plot([s["rate"] for s in chosen], [s["p99_ms"] for s in chosen],
                "o" if met else "x", label="meets bound" if met else "misses bound")
    ax.axhline(bound_ms, ls="--", color="grey", label=f"bound {bound_ms:g} ms")
    ax.axvline(result["max_rate_qps"], ls=":", color="green", label="highest rate met")
    ax.set_yscale("log")
    ax.set_xlabel("Poisson arrival rate (queries/s)")
    ax.set_ylabel("p99 latency (ms, log)")
    ax.set_title("server scenario: rate search")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def scaling(result: dict, path: Path) -> Path | None:
    """p50/p99 added latency and CPU against each dimension of the load, the bound drawn."""
    curves = {d: [p for p in points if "skipped" not in p]
              for d, points in result["curves"].items()}
    curves = {d: points for d, points in curves.items() if points}
    if not curves:
        return None
    fig, axes = _grid(len(curves))
    for ax, (dimension, points) in zip(axes, curves.items()):
        x = [p[dimension] for p in points]
        ax.plot(x, [p["p50_ms"] for p in points], marker="o", label="p50")
        ax.plot(x, [p["p99_ms"] for p in points], marker="o", label="p99")
        ax.axhline(result["config"]["bound_ms"], color="grey", ls="--", lw=1, label="bound")
        ax.set_xscale("log")
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel(dimension)
        ax.set_ylabel("end to end, ms")
        ax.set_ylim(bottom=0)
        cpu = ax.twinx()
        load = [p["cpu_pct_first_pipeline"] or 0.0 for p in points]
        cpu.plot(x, load, color="tab:green", marker=".", lw=1, label="CPU % (right)")
        cpu.set_ylim(0, max(max(load) * 1.2, 10))
        cpu.set_ylabel("CPU % of one core")
        ax.legend(loc="upper left", fontsize=8)
        cpu.legend(loc="upper right", fontsize=8)
    return _save(fig, path)


def soak(results: dict, path: Path) -> Path | None:
    """Resident memory and threads of each soaked pipeline's process against time."""
    runs = {name: r for name, r in results.items() if "samples" in r}
    if not runs:
        return None
    fig, (mem, threads) = _grid(2, 4.5, 3.2)
    for name, r in runs.items():
        t = [s["t_s"] / 60 for s in r["samples"]]
        mem.plot(t, [s["rss_mb"] for s in r["samples"]], label=f"{name} ({r['speed']:g}x)")
        threads.plot(t, [s["threads"] for s in r["samples"]], label=name)
    mem.set(xlabel="minutes", ylabel="resident memory (MB)", ylim=(0, None))
    threads.set(xlabel="minutes", ylabel="threads", ylim=(0, None))
    mem.legend(fontsize=8)
    return _save(fig, path)
