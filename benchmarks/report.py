"""report.md beside results.json: the machine, one section per suite with its tables and plots,
and every suite's run lengths, repeats and seeds, so a reader can judge the figures."""
from __future__ import annotations

import json
from pathlib import Path

from edgert.benchmarks import plots


def num(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:.0f}"
    return str(value)


def table(headers: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(num(c) for c in row) + " |" for row in rows]
    return lines + [""]


def image(path: Path | None, alt: str) -> list[str]:
    return [f"![{alt}]({path.name})", ""] if path else []


def config_line(suite: dict) -> list[str]:
    return [f"Settings: `{json.dumps(suite.get('config', {}))}`", ""]


def machine(results: dict) -> list[str]:
    m = results["machine"]
    device = m.get("device", {})
    rows = [["profile", device.get("profile", "")], ["CPU", device.get("cpu_model") or ""],
            ["CPU count", m.get("cpu_count")], ["memory (MB)", device.get("memory_total_mb")],
            ["GPUs", ", ".join(g["name"] for g in device.get("gpus", [])) or "none"],
            ["Python", m.get("python")], ["platform", m.get("platform")]]
    rows += [[name, version or "not installed"] for name, version in m["versions"].items()]
    return ["## Machine", ""] + table(["", ""], rows)


def transport(suite: dict, out: Path) -> list[str]:
    lines = ["## Transport", "", "`added`: per chunk, its receipt through the middle process "
             "minus its receipt by a receiver fed by the source directly in the same run.",
             ""] + config_line(suite)
    headers = ["variant", "p50 ms", "p90 ms", "p99 ms", "max ms", "added p50", "added p99",
               "lost", "CPU %", "note"]
    for key, variants in suite["results"].items():
        rows = [[name, r.get("p50_ms"), r.get("p90_ms"), r.get("p99_ms"), r.get("max_ms"),
                 r.get("added", {}).get("p50_ms"), r.get("added", {}).get("p99_ms"),
                 r.get("lost"), r.get("cpu_percent"), r.get("skipped", "")]
                for name, r in variants.items()]
        lines += [f"### {key}", ""] + table(headers, rows)
    lines += image(plots.cdfs(suite["results"], out / "transport_cdf.png"), "transport CDF")
    lines += image(plots.over_time(suite["results"], out / "transport_over_time.png"),
                   "transport latency over time")
    return lines


def inference(suite: dict, out: Path) -> list[str]:
    lines = ["## Inference", "", "Single-stream at batch 1. `vs torch` and `vs fp32` are p50 "
             "latency ratios (below 1: faster).", ""] + config_line(suite)
    measured = {name: r for name, r in suite["results"].items() if "engines" in r}
    for name, r in suite["results"].items():
        if name not in measured:
            lines += [f"### {name}", "", f"Skipped: {r.get('skipped', 'not measured')}", ""]
            continue
        rows = [[engine, e.get("provider", ""), e.get("p50_ms"), e.get("p99_ms"),
                 e.get("latency_vs_torch"), e.get("latency_vs_fp32"), e.get("cpu_pct_mean"),
                 e.get("rss_peak_mb"), e.get("peak_memory_mb"), e.get("skipped", "")]
                for engine, e in r["engines"].items()]
        lines += [f"### {name}", ""] + table(
            ["engine", "provider", "p50 ms", "p99 ms", "vs torch", "vs fp32", "CPU %",
             "RSS MB", "load MB", "note"], rows)
        lines += spinning(r["spinning"])
    groups = {name: r["engines"] for name, r in measured.items()}
    return lines + image(plots.cdfs(groups, out / "inference_cdf.png"), "inference CDF")


def spinning(spin: dict) -> list[str]:
    rows = [[name, s["companion"]["p50_ms"], s["companion"]["p99_ms"],
             s["companion"]["iterations_per_s"], s.get("companion_slowdown", 1.0),
             s.get("ort", {}).get("p50_ms"), s.get("ort", {}).get("p99_ms"), s["cpu_pct_mean"]]
            for name, s in spin.items()]
    slow = {name: spin[name].get("companion_slowdown", 1.0) for name in ("spin_on", "spin_off")}
    return ["ONNX Runtime (default thread count) at a steady rate beside a thread running a "
            "small torch model, standing for the rest of a pipeline. Slowdown: that thread's "
            "rate alone over its rate beside ONNX Runtime (above 1: ONNX Runtime took its "
            f"cores): {slow['spin_on']:.2f}x with spinning on (ONNX Runtime's default), "
            f"{slow['spin_off']:.2f}x with spinning off (edgert's).", ""] + table(
        ["ONNX Runtime", "other thread p50 ms", "p99 ms", "iterations/s", "slowdown",
         "ORT p50 ms", "ORT p99 ms", "CPU %"], rows)


def pipelines(suite: dict, out: Path) -> list[str]:
    lines = ["## Pipelines", "", "The source's time is transport: newest sample's timestamp "
             "to arrival. End to end: newest sample to hand-over at the sink.", ""]
    lines += config_line(suite)
    for name, r in suite["results"].items():
        if "skipped" in r:
            lines += [f"### {name}", "", f"Skipped: {r['skipped']}", ""]
            continue
        e2e = r["end_to_end"]
        rows = []
        for node, f in r["nodes"].items():
            rows.append([node, f["p50_ms"], f["p90_ms"], f["p99_ms"], f["processed"],
                         f["dropped"]])
            rows += [[f"{node}: {stage}", t["p50_ms"], t["p90_ms"], t["p99_ms"], t["count"], ""]
                     for stage, t in f.get("stage_ms", {}).items()]
        rows.append(["**end to end**", e2e["p50_ms"], e2e["p90_ms"], e2e["p99_ms"],
                     e2e["count"], r["dropped"]])
        lines += [f"### {name}", "", f"CPU {num(r['cpu_pct_mean'])} % mean, "
                  f"{num(r['cpu_pct_max'])} % max; peak RSS {num(r['rss_peak_mb'])} MB "
                  "(the `edgert run` process).", ""]
        lines += table(["stage", "p50 ms", "p90 ms", "p99 ms", "chunks", "dropped"], rows)
    return lines + image(plots.stages(suite["results"], out / "pipelines_stages.png"),
                         "time per stage")


def scenarios(suite: dict, out: Path) -> list[str]:
    r, cfg = suite["results"], suite["config"]
    ss, ms, sv, off = r["single_stream"], r["multi_stream"], r["server"], r["offline"]
    rows = [["single-stream", "p90", ss["p90_ms"], ss["p50_ms"], ss["p99_ms"],
             f"{num(ss['throughput_qps'])} queries/s"],
            ["multi-stream", "p99 of the slowest", ms["p99_ms"], ms["p50_ms"], ms["p99_ms"],
             f"{cfg['streams']} streams every {num(cfg['interval_ms'])} ms, "
             f"{num(ms['late_rounds'])} late rounds"],
            ["server", "highest rate with p99 within bound", sv.get("p99_ms"),
             sv.get("p50_ms"), sv.get("p99_ms"),
             f"{num(sv['max_rate_qps'])} queries/s at p99 <= {num(cfg['bound_ms'])} ms"],
            ["offline", "throughput", None, None, None,
             f"{num(off['samples_per_s'])} queries/s"]]
    lines = ["## Scenarios", "", "MLPerf LoadGen meanings on `feed -> infer (reference "
             "bundle, ort-cpu) -> sink`; latency runs from when a query was due.", ""]
    lines += config_line(suite) + table(
        ["scenario", "figure", "figure ms", "p50 ms", "p99 ms", "note"], rows)
    load = r["offered_load"]
    rows = [[p["policy"], p["load"], p["rate"], p["throughput_qps"], p["p50_ms"], p["p99_ms"],
             p["dropped"], p["backlog"], p.get("unfinished")] for p in load["points"].values()]
    lines += ["### Offered load and edge policy", "",
              f"Saturation (offline): {num(load['saturation_qps'])} queries/s. A `block` "
              "edge loses nothing and its latency grows past saturation; a `latest` edge "
              "keeps latency flat and counts what it drops.", ""]
    lines += table(["edge", "x saturation", "offered/s", "completed/s", "p50 ms", "p99 ms",
                    "dropped", "backlog", "unfinished"], rows)
    lines += image(plots.offered_load(load, out / "scenarios_load.png"), "offered load")
    lines += image(plots.server_search(sv, cfg["bound_ms"], out / "scenarios_server.png"),
                   "server rate search")
    timeline = {"scenarios": {"single-stream": ss, "multi-stream (slowest)": ms,
                              "server at the highest rate": sv}}
    return lines + image(plots.over_time(timeline, out / "scenarios_over_time.png"),
                         "scenario latency over time")


def reliability(suite: dict, out: Path) -> list[str]:
    r = suite["results"]
    s = r["summary"]
    lines = ["## Reliability", "", f"Faults survived {s['faults_survived']}/{s['faults']}; "
             f"samples lost before a fault: {s['lost_before_fault']}; hostile inputs tried "
             f"{s['hostile_tried']}, crashed {s['hostile_crashed']}; a rejected frame costs "
             f"{num(r['reject']['reject_us_p50'])} us (p50), {num(s['reject_us_p99'])} us "
             f"(p99); memory growth over {num(r['soak']['seconds'])} s: "
             f"{num(100 * s['soak_rss_growth'])} %.", ""]
    lines += config_line(suite) + table(
        ["fault", "survived", "detail"],
        [[name, f["survived"], ", ".join(f"{k} {v}" for k, v in f.items() if k != "survived")]
         for name, f in r["faults"].items()])
    h = r["hostile"]
    lines += table(["hostile inputs", "refused", "decoded", "crashed", "peak bytes"],
                   [[h["tried"], h["refused"], h["decoded"], h["crashed"], h["peak_bytes_max"]]])
    scaling = r["scaling"]
    for dimension, points in scaling["curves"].items():
        rows = [[p.get(dimension), p.get("p50_ms"), p.get("p99_ms"), p.get("dropped"),
                 p.get("cpu_pct_first_pipeline"), p.get("skipped", "")] for p in points]
        lines += [f"### Scaling: {dimension} (largest with p99 <= "
                  f"{num(scaling['config']['bound_ms'])} ms: "
                  f"{scaling['largest_held'][dimension]})", ""]
        lines += table([dimension, "p50 ms", "p99 ms", "dropped", "cpu %", "note"], rows)
    lines += image(plots.scaling(scaling, out / "reliability_scaling.png"),
                   "latency and CPU against load")
    soaks = r.get("soak_pipelines", {})
    lines += ["### Soak of the live pipelines", ""] + table(
        ["pipeline", "minutes", "speed", "RSS growth %", "threads/sockets/fds leaked",
         "unaccounted chunks", "dropped", "p99 ms"],
        [[name, num(x["seconds"] / 60), x["speed"], num(100 * x["rss_growth"]),
          f"{x['threads_leaked']}/{x['sockets_leaked']}/{x['fds_leaked']}",
          x["unaccounted_chunks"], x["dropped"], num(x["end_to_end"]["p99_ms"])]
         for name, x in soaks.items() if "skipped" not in x])
    return lines + image(plots.soak(soaks, out / "reliability_soak.png"),
                         "memory and threads of the soaked pipelines")


SECTIONS = {"transport": transport, "inference": inference, "pipelines": pipelines,
            "scenarios": scenarios, "reliability": reliability}


def write_report(results: dict, out_dir: Path) -> Path:
    """Write out_dir/report.md (and its PNGs) from the results of `edgert bench`."""
    out_dir = Path(out_dir)
    lines = [f"# edgert bench ({'quick' if results.get('quick') else 'full'})", "",
             f"Started {results.get('started', '')}; seconds per suite: "
             f"`{json.dumps(results.get('wall_s', {}))}`.", ""]
    lines += machine(results)
    for name, section in SECTIONS.items():
        suite = results.get(name)
        if suite is None:
            continue
        if "skipped" in suite:
            lines += [f"## {name.capitalize()}", "", f"Skipped: {suite['skipped']}", ""]
            continue
        lines += section(suite, out_dir)
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
