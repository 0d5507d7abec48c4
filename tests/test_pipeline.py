"""The runtime on real pipelines fed in-process: scheduling, quarantine, overload, built-in nodes."""
import gc
import os
import time

import numpy as np
import pytest
from scipy import signal

from edgert.runtime import spec
from edgert.runtime.pipeline import Pipeline
from edgert.runtime.spec import PipelineError
from edgert.streams import Chunk, StreamInfo, local_clock

INFO = StreamInfo.make("sim", 4, type="EEG", rate=250.0)


def build(nodes, edges=None, overrides=()):
    raw = {"name": "t", "nodes": nodes}
    if edges is not None:
        raw["edges"] = edges
    return Pipeline(spec.parse(raw, "test.yaml", overrides), "test.yaml")


def chunks_of(data, info=INFO, size=10, t0=None):
    """Split (samples x channels) data into chunks with regular timestamps ending now."""
    t0 = local_clock() - len(data) / info.rate if t0 is None else t0
    stamps = t0 + np.arange(len(data)) / info.rate
    return [Chunk(data[i:i + size], stamps[i:i + size], info, seq=k)
            for k, i in enumerate(range(0, len(data), size))]


def run_through(pipe, chunks, settle=0.3):
    pipe.start()
    for c in chunks:
        pipe.nodes["src"].queue.put(c)
    deadline = time.monotonic() + 10
    while (not pipe.nodes["src"].queue.empty() and time.monotonic() < deadline
           and pipe.scheduler.fatal is None):
        time.sleep(0.01)
    time.sleep(settle)
    pipe.stop()
    return pipe.report()


FEED = {"name": "src", "node": "pipeline_nodes:Feed"}
SINK = {"name": "sink", "node": "pipeline_nodes:Collect"}


def test_chain_forwards_every_chunk_in_order_and_reports():
    pipe = build([FEED, SINK])
    data = np.arange(400, dtype=np.float32).reshape(100, 4)
    report = run_through(pipe, chunks_of(data))
    got = pipe.nodes["sink"].chunks
    assert [c.seq for c in got] == list(range(10))
    np.testing.assert_array_equal(np.concatenate([c.data for c in got]), data)
    assert report["end_to_end"]["count"] == 10
    assert report["nodes"]["sink"]["processed"] == 10
    assert report["dropped"] == 0
    for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms"):
        assert report["end_to_end"][key] >= 0
    assert report["end_to_end"]["p50_ms"] <= report["end_to_end"]["p99_ms"]


def test_a_running_pipeline_keeps_what_it_started_with_out_of_garbage_collections():
    pipe = build([FEED, SINK])
    alive = len(gc.get_objects())
    pipe.start()
    try:
        assert gc.get_freeze_count() >= alive
    finally:
        pipe.stop()
    assert gc.get_freeze_count() == 0


def test_priority_is_given_to_the_pipeline_threads_and_the_caller_keeps_its_own():
    before = os.getpriority(os.PRIO_PROCESS, 0)
    lower = min(before + 5, 19)  # a lower priority needs no privilege
    pipe = Pipeline(spec.parse({"name": "t", "nodes": [FEED, SINK], "priority": lower},
                               "t.yaml"), "t.yaml")
    pipe.start()
    try:
        threads = pipe.scheduler.threads + pipe.scheduler.workers
        assert threads
        assert all(os.getpriority(os.PRIO_PROCESS, t.native_id) == lower for t in threads)
        assert os.getpriority(os.PRIO_PROCESS, 0) == before
    finally:
        pipe.stop()
    assert pipe.report()["priority"] == lower


@pytest.mark.parametrize("raw, words", [
    ({"name": "x"}, ["nodes", "Field required"]),
    ({"name": "x", "nodes": [{"name": "a", "node": "nope"}]}, ["node 'a'", "unknown node 'nope'"]),
    ({"name": "x", "nodes": [{"name": "a", "node": "methods.btta_dg.node:Adapt"}]},
     ["node 'a'", "'edgert.methods.btta_dg.node:Adapt'"]),
    ({"name": "x", "nodes": [{"name": "f", "node": "filter", "params": {"order": "high"}}]},
     ["node 'f'", "params.order", "params.freqs"]),
    ({"name": "x", "nodes": [{"name": "f", "node": "filter", "params": {"freqs": 10}}]},
     ["node 'f'", "bandpass filter takes 2"]),
    ({"name": "x", "nodes": [{"name": "w", "node": "window", "params": {"length": 1, "hop": 1,
                                                                        "hoop": 2}}]},
     ["node 'w'", "params.hoop", "length, hop"]),
    ({"name": "x", "nodes": [FEED, SINK], "edges": [{"from": "src", "to": "sink.data"}]},
     ["no port 'data'", "['in']"]),
    ({"name": "x", "nodes": [FEED, SINK], "edges": [{"from": "src", "to": "gone"}]},
     ["'gone'", "not in nodes"]),
    ({"name": "x", "nodes": [FEED, SINK], "edges": []}, ["'sink'", "no edge"]),
    ({"name": "x", "nodes": [FEED, SINK, SINK]}, ["unique", "sink"]),
    ({"name": "x", "nodes": [FEED, SINK], "edges": [{"from": "src", "to": "sink",
                                                     "policy": "newest"}]},
     ["edge 'src -> sink'", "policy", "'block' or 'latest'"]),
    ({"name": "x", "nodes": [FEED, {"name": "a", "node": "pipeline_nodes:Slow",
                                    "params": {"seconds": 0}},
                             {"name": "b", "node": "pipeline_nodes:Slow",
                              "params": {"seconds": 0}}],
      "edges": [{"from": "src", "to": "a"}, {"from": "a", "to": "b"}, {"from": "b", "to": "a"}]},
     ["cycle", "one way"]),
])
def test_bad_pipelines_name_the_place_and_the_fix(raw, words):
    with pytest.raises(PipelineError) as err:
        Pipeline(spec.parse(raw, "bad.yaml"), "bad.yaml")
    message = str(err.value)
    assert message.startswith("bad.yaml")
    for word in words:
        assert word in message, message


def test_bad_yaml_files(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nnodes: [\n")
    with pytest.raises(PipelineError, match="broken.yaml: not valid YAML"):
        spec.load(broken)
    with pytest.raises(PipelineError, match="no such pipeline file"):
        spec.load(tmp_path / "missing.yaml")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(PipelineError, match="a mapping with 'name' and 'nodes'"):
        spec.load(listed)


def test_set_overrides_params_and_rejects_unknown_nodes():
    nodes = [FEED, {"name": "slow", "node": "pipeline_nodes:Slow", "params": {"seconds": 1}},
             SINK]
    pipe = build(nodes, overrides=["slow.seconds=0.002", "slow.thread=true"])
    assert pipe.nodes["slow"].p.seconds == 0.002
    assert "slow" in pipe.scheduler.threaded
    with pytest.raises(PipelineError, match=r"names node 'nope'.*\['sink', 'slow', 'src'\]"):
        build(nodes, overrides=["nope.x=1"])
    with pytest.raises(PipelineError, match="expected NODE.FIELD=VALUE"):
        build(nodes, overrides=["slow=1"])


def test_an_empty_set_value_is_an_error_not_a_match_for_anything():
    """`--set source.name=` once read as "no name", so any EEG stream was taken."""
    with pytest.raises(PipelineError, match=r"'source.name=': the value is empty.*"
                                            r"source.name=null"):
        spec.parse({"name": "t", "nodes": [{"name": "source", "node": "lsl_inlet"}]}, "t.yaml",
                   ["source.name="])
    cleared = spec.parse({"name": "t", "nodes": [{"name": "source", "node": "lsl_inlet",
                                                  "params": {"name": "amp"}}]}, "t.yaml",
                         ["source.name=null"])
    assert cleared.nodes[0].params["name"] is None


def bad_chunks():
    t = np.array([local_clock()])
    good = np.zeros((1, 4), np.float32)
    nan = good.copy()
    nan[0, 1] = np.nan
    inf = good.copy()
    inf[0, 2] = np.inf
    return {
        "nonfinite": [Chunk(nan, t, INFO), Chunk(inf, t, INFO)],
        "channels": [Chunk(np.zeros((1, 3), np.float32), t, INFO)],
        "dtype": [Chunk(np.zeros((1, 4), np.float64), t, INFO)],
        "shape": [Chunk(np.zeros((1, 4, 2), np.float32), t, INFO)],
        "timestamps": [Chunk(np.zeros((2, 4), np.float32), t, INFO)],
    }


def test_each_kind_of_bad_chunk_is_quarantined_and_counted_and_the_pipeline_runs_on(caplog):
    pipe = build([FEED, SINK])
    good = chunks_of(np.ones((50, 4), np.float32), size=10)
    bad = bad_chunks()
    stream = [good[0]] + [c for kind in bad.values() for c in kind] + good[1:] + bad["nonfinite"]
    report = run_through(pipe, stream)
    kinds = report["quarantined"]["sink"]
    assert kinds == {"nonfinite": 4, "channels": 1, "dtype": 1, "shape": 1, "timestamps": 1}
    assert report["nodes"]["sink"]["quarantined"] == 8
    assert len(pipe.nodes["sink"].chunks) == 5
    assert all(np.isfinite(c.data).all() for c in pipe.nodes["sink"].chunks)
    kept = pipe.scheduler.quarantine.kept
    assert [kind for _, _, kind, _ in kept][:2] == ["nonfinite", "nonfinite"]
    assert kept[2][3].data.shape == (1, 3), "the bad chunk itself is kept for inspection"
    logged = [r.getMessage() for r in caplog.records if "quarantined" in r.getMessage()]
    assert len(logged) == 5, "each kind is logged once"
    assert all("'sink'" in m and "'sim'" in m for m in logged)


WINDOW = {"name": "win", "node": "window", "params": {"length": 0.1, "hop": 0.1}}


def _irregular(n: int) -> list[Chunk]:
    info = StreamInfo.make("markers", 4, rate=0)
    return [Chunk(np.zeros((1, 4), np.float32), np.array([local_clock()]), info, k)
            for k in range(n)]


def test_one_stray_chunk_of_a_stream_a_node_cannot_take_is_quarantined_not_fatal():
    pipe = build([FEED, WINDOW, SINK])
    good = chunks_of(np.ones((50, 4), np.float32), size=10)
    report = run_through(pipe, good[:2] + _irregular(1) + good[2:])
    assert report["quarantined"]["win"] == {"stream": 1} and pipe.fatal is None
    assert sum(len(c) for c in pipe.nodes["sink"].chunks) > 0, "the good stream went on"


def test_a_stream_a_node_cannot_take_stops_the_run_naming_the_node():
    pipe = build([FEED, WINDOW, SINK])
    report = run_through(pipe, _irregular(5))
    assert "node 'win'" in pipe.fatal and "'markers' is irregular" in pipe.fatal
    assert pipe.fatal in pipe.shortfalls(report)


def test_a_stream_a_node_cannot_take_after_a_good_one_never_stops_the_run():
    pipe = build([FEED, WINDOW, SINK])
    good = chunks_of(np.ones((50, 4), np.float32), size=10)
    report = run_through(pipe, good[:2] + _irregular(5) + good[2:])
    assert report["quarantined"]["win"] == {"stream": 5} and pipe.fatal is None


def test_overload_on_a_latest_edge_keeps_memory_bounded_and_latency_flat():
    """Input at 10x what the model stage can take: drops are counted, latency does not grow."""
    nodes = [FEED, {"name": "model", "node": "pipeline_nodes:Slow",
                    "params": {"seconds": 0.02}}, SINK]
    edges = [{"from": "src", "to": "model", "policy": "latest", "capacity": 2},
             {"from": "model", "to": "sink"}]
    pipe = build(nodes, edges)
    pipe.start()
    period, n = 0.002, 1500
    peak = 0
    for i in range(n):
        now = local_clock()
        pipe.nodes["src"].queue.put(Chunk(np.full((1, 4), i, np.float32), np.array([now]), INFO,
                                          seq=i))
        peak = max(peak, len(pipe.edges[0]))
        time.sleep(period)
    pipe.stop()
    report = pipe.report()
    got = pipe.nodes["sink"].chunks
    lat = np.array([c.trace[-1][2] - c.timestamps[-1] for c in got])
    assert peak <= 2
    assert report["nodes"]["model"]["dropped"] > n * 0.7
    assert report["nodes"]["model"]["dropped"] + len(got) == n
    half = len(lat) // 2
    assert np.median(lat[half:]) < np.median(lat[:half]) + 0.02
    assert np.median(lat[half:]) < 0.1, "latency stays near one model run, not the backlog"


def test_block_edge_is_lossless_under_backpressure():
    nodes = [FEED, {"name": "model", "node": "pipeline_nodes:Slow",
                    "params": {"seconds": 0.002}}, SINK]
    edges = [{"from": "src", "to": "model", "policy": "block", "capacity": 4},
             {"from": "model", "to": "sink"}]
    pipe = build(nodes, edges)
    data = np.arange(800, dtype=np.float32).reshape(200, 4)
    report = run_through(pipe, chunks_of(data, size=1))
    assert report["dropped"] == 0 and report["edges"][0]["chunks"] == 200
    np.testing.assert_array_equal(np.concatenate([c.data for c in pipe.nodes["sink"].chunks]),
                                  data)


def test_deadline_expires_stale_chunks_and_counts_them():
    nodes = [FEED, SINK]
    edges = [{"from": "src", "to": "sink", "deadline_ms": 50}]
    pipe = build(nodes, edges)
    now = local_clock()
    fresh = Chunk(np.zeros((1, 4), np.float32), np.array([now + 1.0]), INFO)
    stale = Chunk(np.zeros((1, 4), np.float32), np.array([now - 1.0]), INFO)
    report = run_through(pipe, [stale, fresh, stale])
    assert report["edges"][0]["expired"] == 2
    assert report["dropped"] == 2
    assert len(pipe.nodes["sink"].chunks) == 1


def test_fan_out_gives_each_branch_its_own_trace():
    nodes = [FEED, {"name": "a", "node": "pipeline_nodes:Collect"},
             {"name": "b", "node": "pipeline_nodes:Collect"}]
    edges = [{"from": "src", "to": "a"}, {"from": "src", "to": "b"}]
    pipe = build(nodes, edges)
    run_through(pipe, chunks_of(np.zeros((20, 4), np.float32)))
    a, b = pipe.nodes["a"].chunks, pipe.nodes["b"].chunks
    assert len(a) == len(b) == 2
    assert a[0].trace is not b[0].trace


def test_window_emits_length_every_hop_whatever_the_chunking():
    data = np.random.default_rng(0).standard_normal((1000, 4)).astype(np.float32)
    windows = {}
    for size in (1, 7, 32):
        pipe = build([FEED, {"name": "win", "node": "window",
                             "params": {"length": 1.0, "hop": 0.2}}, SINK])
        run_through(pipe, chunks_of(data, size=size, t0=100.0))
        windows[size] = pipe.nodes["sink"].chunks
    assert len(windows[1]) == 1 + (1000 - 250) // 50
    for size in (7, 32):
        assert len(windows[size]) == len(windows[1])
        for w1, w in zip(windows[1], windows[size]):
            np.testing.assert_array_equal(w1.data, w.data)
            np.testing.assert_array_equal(w1.timestamps, w.timestamps)
    last = windows[1][-1]
    np.testing.assert_array_equal(last.data, data[-250:])
    assert last.data.shape == (250, 4)


def test_window_restarts_after_a_gap():
    pipe = build([FEED, {"name": "win", "node": "window", "params": {"length": 0.1, "hop": 0.1}},
                  SINK])
    first = chunks_of(np.zeros((20, 4), np.float32), size=20, t0=0.0)
    second = chunks_of(np.ones((25, 4), np.float32), size=25, t0=10.0)
    second[0].gap = True
    run_through(pipe, first + second)
    got = pipe.nodes["sink"].chunks
    assert len(got) == 1, "20 samples < one 25-sample window; after the gap a fresh window fills"
    assert np.all(got[0].data == 1)


def test_filter_matches_offline_filtering_across_chunks():
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2000, 4))
    pipe = build([FEED, {"name": "bp", "node": "filter",
                         "params": {"kind": "bandpass", "freqs": [8, 30], "order": 4}}, SINK])
    info = StreamInfo.make("sim64", 4, type="EEG", rate=250.0, dtype="float64")
    run_through(pipe, chunks_of(data, info=info, size=13))
    got = np.concatenate([c.data for c in pipe.nodes["sink"].chunks])
    sos = signal.butter(4, [8, 30], btype="bandpass", fs=250.0, output="sos")
    zi = signal.sosfilt_zi(sos)[:, :, None] * data[:1]
    want, _ = signal.sosfilt(sos, data, axis=0, zi=zi)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    spectrum = np.abs(np.fft.rfft(got[500:, 0]))
    freqs = np.fft.rfftfreq(1500, 1 / 250)
    assert spectrum[(freqs > 12) & (freqs < 25)].mean() > 10 * spectrum[freqs > 60].mean()


def test_a_cutoff_beyond_nyquist_stops_the_run_naming_node_and_field():
    pipe = build([FEED, {"name": "lp", "node": "filter",
                         "params": {"kind": "lowpass", "freqs": 200}}, SINK])
    report = run_through(pipe, chunks_of(np.zeros((30, 4), np.float32)))
    assert set(report["quarantined"]) == {"lp"} and set(report["quarantined"]["lp"]) == {"stream"}
    assert "node 'lp'" in pipe.fatal and "'freqs'" in pipe.fatal and "Nyquist" in pipe.fatal
    assert pipe.fatal in pipe.shortfalls(report)


def test_resample_keeps_a_sine_and_does_not_depend_on_chunking():
    t = np.arange(1000) / 250.0
    data = np.stack([np.sin(2 * np.pi * 5 * t)] * 2, axis=1).astype(np.float32)
    info = StreamInfo.make("sine", 2, type="EEG", rate=250.0)
    outs = {}
    for size in (1, 9, 64):
        pipe = build([FEED, {"name": "rs", "node": "resample", "params": {"rate": 100}}, SINK])
        run_through(pipe, chunks_of(data, info=info, size=size, t0=0.0))
        got = pipe.nodes["sink"].chunks
        outs[size] = (np.concatenate([c.data for c in got]),
                      np.concatenate([c.timestamps for c in got]))
        assert got[0].info.rate == 100
    y, ts = outs[1]
    assert abs(len(y) - 400) <= 1
    np.testing.assert_allclose(np.diff(ts), 0.01, atol=1e-9)
    for size in (9, 64):
        np.testing.assert_allclose(outs[size][0], y, atol=1e-5)
    tail = y[100:, 0]
    peak = np.fft.rfftfreq(len(tail), 0.01)[np.argmax(np.abs(np.fft.rfft(tail)))]
    assert abs(peak - 5.0) < 0.4
    assert abs(np.sqrt(np.mean(tail ** 2)) - np.sqrt(0.5)) < 0.05, "causal low-pass keeps 5 Hz"


def test_align_joins_streams_of_different_rates_and_reports_skew():
    eeg = StreamInfo.make("eeg", 2, type="EEG", rate=250.0)
    ecg = StreamInfo.make("ecg", 1, type="ECG", rate=100.0)
    nodes = [{"name": "a", "node": "pipeline_nodes:Feed"}, {"name": "b", "node":
                                                            "pipeline_nodes:Feed"},
             {"name": "join", "node": "align", "params": {"inputs": ["eeg", "ecg"]}}, SINK]
    edges = [{"from": "a", "to": "join.eeg"}, {"from": "b", "to": "join.ecg"},
             {"from": "join", "to": "sink"}]
    pipe = build(nodes, edges)
    pipe.start()
    t_eeg = np.arange(500) / 250.0
    t_ecg = np.arange(210) / 100.0
    for i in range(0, 500, 25):
        pipe.nodes["a"].queue.put(Chunk(np.stack([t_eeg[i:i + 25]] * 2, 1).astype(np.float32),
                                        t_eeg[i:i + 25], eeg))
    for i in range(0, 210, 10):
        pipe.nodes["b"].queue.put(Chunk(t_ecg[i:i + 10, None].astype(np.float32),
                                        t_ecg[i:i + 10], ecg))
    time.sleep(1.0)
    pipe.stop()
    got = pipe.nodes["sink"].chunks
    joined = np.concatenate([c.data for c in got])
    assert joined.shape == (500, 3)
    assert got[0].info.channels == ("eeg:ch0", "eeg:ch1", "ecg:ch0")
    assert np.all(joined[:, 2] <= joined[:, 0] + 1e-6), "held ECG sample is never from the future"
    assert np.all(joined[:, 0] - joined[:, 2] < 0.01 + 1e-6)
    skew = pipe.report()["nodes"]["join"]["skew"]["ecg"]
    assert 0 < skew["max_ms"] <= 10.0 + 1e-3


def test_prometheus_endpoint_serves_pipeline_metrics_on_loopback():
    import urllib.request

    raw = {"name": "m", "metrics_port": 0, "nodes": [FEED, SINK]}
    pipe = Pipeline(spec.parse(raw, "m.yaml"), "m.yaml")
    pipe.start()
    try:
        for c in chunks_of(np.zeros((30, 4), np.float32)):
            pipe.nodes["src"].queue.put(c)
        time.sleep(0.3)
        host, port = pipe.metrics_server.server_address[:2]
        assert host == "127.0.0.1"
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        pipe.stop()
    assert 'edgert_processed_total{node="sink"} 3.0' in text
    assert 'edgert_latency_ms{quantile="p99",stage="end_to_end"}' in text
