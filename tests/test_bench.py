"""The benchmark suites on tiny runs: every figure present and in a sane order, the edge
policies behave as documented, compare gates a build, and the CLI writes its report."""
import json
import subprocess
from pathlib import Path

import pytest

from edgert.benchmarks.common import reference_bundle
from edgert.benchmarks.compare import compare
from edgert.benchmarks.scenarios import Config, run_scenarios

TINY = Config(seconds=0.8, warmup_s=0.2, repeats=1, streams=2, interval_ms=20.0,
              bound_ms=50.0, search_steps=3, loads=(0.5, 3.0))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return reference_bundle(tmp_path_factory.mktemp("bench"))


@pytest.fixture(scope="module")
def scenarios(bundle) -> dict:
    return run_scenarios(True, config=TINY, bundle=bundle)


def test_scenarios_give_loadgen_figures_in_order(scenarios):
    r = scenarios["results"]
    for name in ("single_stream", "multi_stream", "server"):
        s = r[name]
        assert 0 < s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= s["max_ms"], name
        assert s["count"] > 0 and len(s["samples"]) == s["count"]
        assert all(t >= TINY.warmup_s for t, _ in s["over_time"]), "warm-up is excluded"
    assert r["multi_stream"]["rounds"] > 0
    assert r["offline"]["samples_per_s"] > 0
    assert r["server"]["max_rate_qps"] > 0
    assert r["server"]["p99_ms"] <= TINY.bound_ms
    assert [s["met"] for s in r["server"]["steps"]].count(True) >= 1
    assert scenarios["config"]["seconds"] == TINY.seconds and scenarios["config"]["seeds"] == [0]


def test_block_edge_loses_nothing_and_latest_edge_drops_past_saturation(scenarios):
    points = scenarios["results"]["offered_load"]["points"]
    below, past = points["block@0.5x"], points["block@3x"]
    assert below["dropped"] == 0 and below["backlog"] == 0
    assert past["dropped"] == 0 and past["backlog"] > 0, "block waits instead of dropping"
    latest = points["latest@3x"]
    assert latest["dropped"] > 0
    assert latest["p99_ms"] < past["p99_ms"], "latest keeps latency flat past saturation"


def results(p99_ms: float, qps: float) -> dict:
    return {"machine": {"cpu_count": 2},
            "scenarios": {"config": {"bound_ms": 10.0},
                          "results": {"server": {"p99_ms": p99_ms, "max_ms": 9.0,
                                                 "max_rate_qps": qps, "steps": [1, 2]}}}}


def test_compare_flags_slower_latency_and_lower_throughput_only():
    rows = {r.figure: r for r in compare(results(2.0, 100.0), results(2.5, 85.0), 0.1)}
    assert set(rows) == {"scenarios.server.p99_ms",
                         "scenarios.server.max_rate_qps"}
    assert rows["scenarios.server.p99_ms"].regression
    assert rows["scenarios.server.p99_ms"].ratio == pytest.approx(1.25)
    assert rows["scenarios.server.max_rate_qps"].regression
    better = compare(results(2.0, 100.0), results(1.0, 200.0), 0.1)
    assert not any(r.regression for r in better)


def write(path: Path, payload: dict) -> str:
    path.write_text(json.dumps(payload))
    return str(path)


def test_bench_compare_exits_1_on_regression_and_0_within_threshold(tmp_path):
    old = write(tmp_path / "old.json", results(2.0, 100.0))
    worse = write(tmp_path / "worse.json", results(2.6, 100.0))
    close = write(tmp_path / "close.json", results(2.1, 95.0))
    failed = subprocess.run(["edgert", "bench", "compare", old, worse], capture_output=True,
                            text=True, timeout=60)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "REGRESSION" in failed.stdout and "1 regression(s)" in failed.stdout
    passed = subprocess.run(["edgert", "bench", "compare", old, close, "--threshold", "0.1"],
                            capture_output=True, text=True, timeout=60)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "0 regression(s)" in passed.stdout


def test_bench_inference_writes_results_report_and_plots(tmp_path, bundle):
    out = tmp_path / "out"
    done = subprocess.run(["edgert", "bench", "inference", "--quick", "--out", str(out),
                           "--bundle", str(bundle)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads((out / "results.json").read_text())
    assert saved["machine"]["cpu_count"] >= 1 and saved["machine"]["versions"]["onnxruntime"]
    engines = saved["inference"]["results"]["reference"]["engines"]
    assert set(engines) == {"torch", "ort_fp32", "ort_fp16", "ort_int8"}
    assert engines["ort_fp32"]["latency_vs_fp32"] == 1.0
    assert engines["torch"]["latency_vs_torch"] == 1.0 and len(engines["torch"]["samples"]) > 0
    spin = saved["inference"]["results"]["reference"]["spinning"]
    assert set(spin) == {"alone", "spin_off", "spin_on"} and spin["spin_on"]["ort"]["count"] > 0
    report = (out / "report.md").read_text()
    assert "## Inference" in report and "](inference_cdf.png)" in report
    assert (out / "inference_cdf.png").stat().st_size > 10_000


def test_report_names_a_method_whose_model_is_not_trained_here(tmp_path, bundle):
    """A fresh machine has no trained method models: the inference section says so."""
    from edgert.benchmarks.inference import run_inference
    from edgert.benchmarks.report import write_report
    from edgert.benchmarks.suite import machine

    suite = run_inference(True, tmp_path, bundles=[bundle])
    suite["results"]["bolt"] = {"skipped": "no trained bolt model on this machine"}
    report = write_report({"machine": machine(), "inference": suite}, tmp_path).read_text()
    assert "### bolt\n\nSkipped: no trained bolt model on this machine" in report
    assert "](inference_cdf.png)" in report


def test_unknown_suite_is_refused_with_the_choices(tmp_path):
    done = subprocess.run(["edgert", "bench", "nope", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown suite(s) ['nope']" in done.stderr
    assert "pipelines" in done.stderr, "the error lists the suites"


@pytest.mark.slow
def test_quick_bench_of_every_suite_writes_every_plot(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(["edgert", "bench", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    saved = json.loads((out / "results.json").read_text())
    assert {"transport", "inference", "pipelines", "scenarios"} <= set(saved)
    assert saved["pipelines"]["results"]["passthrough"]["end_to_end"]["count"] > 100
    for png in ("inference_cdf", "pipelines_stages", "scenarios_load", "scenarios_server",
                "scenarios_over_time"):
        assert (out / f"{png}.png").exists(), png


def test_transport_figures_sit_under_the_variant_names():
    from edgert.benchmarks.suite import headline

    raw = {"config": {}, "results": {"22x250/chunk1": {"raw_pylsl": {"p50_ms": 0.4},
                                                       "edgert": {"p50_ms": 0.5}},
                                     "64x1000/chunk1": {"raw_pylsl": {"p50_ms": 0.3}}}}
    out = headline(raw)
    assert out["edgert"]["p50_ms"] == 0.5 and out["raw_pylsl"]["p50_ms"] == 0.4
    assert out["headline_stream"] == "22x250/chunk1" and "64x1000/chunk1" in out["results"]


def test_a_phase_shorter_than_the_companions_warm_up_still_times_its_calls():
    """The companion warms up before a phase starts: a quick phase beside a spinning ONNX
    Runtime once timed no call, and the inference suite failed on an empty array."""
    from edgert.benchmarks.inference import beside, phase_figures

    phase = beside(None, {}, 0.02, 200.0)
    assert len(phase.calls) > 0
    assert phase_figures([phase])["companion"]["count"] == len(phase.calls)
