"""LSL through edgert between real processes: passthrough, reconnect, the CLI."""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from edgert.runtime import spec
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.lsl import FLAGS, Inlet, Outlet, from_lsl_info, to_lsl_info

HERE = Path(__file__).parent


def source(name: str, start: int = 0, rate: float = 250.0, channels: int = 4, seconds=3600,
           chunk: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(HERE / "lsl_source.py"), name, str(channels),
                             str(rate), str(start), str(seconds), str(chunk)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def collect(inlet: Inlet, seconds: float) -> list[Chunk]:
    got, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        chunk = inlet.pull(0.1)
        if chunk is not None:
            got.append(chunk)
    return got


def test_info_round_trip_keeps_channels_and_units():
    info = StreamInfo(name="x", type="EEG", channels=("C3", "Cz", "C4"),
                      units=("uV", "uV", "uV"), rate=512.0, dtype="int16", source_id="amp-7")
    assert from_lsl_info(to_lsl_info(info)) == info
    with pytest.raises(ValueError, match="stream 'x': dtype 'complex64' has no LSL format"):
        to_lsl_info(StreamInfo(name="x", dtype="complex64"))


def test_inlet_rejects_unknown_processing_flags():
    with pytest.raises(ValueError, match="unknown LSL processing flags"):
        Inlet(name="x", processing=("clocksync", "smooth"))


def test_clocksync_is_left_off_for_a_stream_of_this_host(uid):
    info = StreamInfo(name=f"cs-{uid}", type="EEG", channels=("a",), rate=100.0)
    outlet = Outlet(info)
    inlet = Inlet(name=info.name)
    assert inlet.flags & FLAGS["clocksync"], "asked for by default"
    assert inlet.open(5.0)
    assert not inlet.applied & FLAGS["clocksync"], "one host, one clock: nothing to correct"
    outlet.close()


def test_string_markers_round_trip(uid):
    info = StreamInfo(name=f"mk-{uid}", type="Markers", channels=("label",), dtype="string")
    outlet = Outlet(info)
    inlet = Inlet(name=info.name)
    assert inlet.open(5.0)
    time.sleep(0.3)
    now = local_clock()
    outlet.push(Chunk(np.array([["left"], ["right,2"]], dtype=object),
                      np.array([now - 0.5, now]), info))
    got = []  # a pull returns once one sample is in; the second may come in the next one
    deadline = time.monotonic() + 5
    while len(got) < 2 and time.monotonic() < deadline:
        chunk = inlet.pull(1.0)
        got += [] if chunk is None else list(zip(chunk.data.tolist(), chunk.timestamps))
    assert [value for value, _ in got] == [["left"], ["right,2"]]
    np.testing.assert_allclose([t for _, t in got], [now - 0.5, now], atol=1e-6)
    assert inlet.info.channels == ("label",)


def test_passthrough_between_processes_forwards_every_sample(uid, tmp_path):
    name = f"amp-{uid}"
    amp = source(name, channels=8, rate=500.0)
    report_path = tmp_path / "report.json"
    pipe = subprocess.Popen(["edgert", "run", "passthrough", "--set", f"source.name={name}",
                             "--duration", "6", "--report", str(report_path), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        inlet = Inlet(name=f"{name}-passthrough")
        assert inlet.open(10.0), "the passthrough outlet appears"
        got = collect(inlet, 3.0)
    finally:
        out, _ = pipe.communicate(timeout=30)
        amp.kill()
    assert pipe.returncode == 0, out
    values = np.concatenate([c.data for c in got])
    stamps = np.concatenate([c.timestamps for c in got])
    assert values.shape[1] == 8 and len(values) > 1000
    np.testing.assert_array_equal(np.diff(values[:, 0]), 1.0, "no sample lost or reordered")
    np.testing.assert_allclose(np.diff(stamps), 1 / 500.0, atol=1e-4)  # clocksync updates
    assert inlet.info.name == f"{name}-passthrough" and inlet.info.n_channels == 8
    report = json.loads(report_path.read_text())
    assert set(report["end_to_end"]) >= {"p50_ms", "p90_ms", "p99_ms", "max_ms", "count"}
    assert report["end_to_end"]["count"] > 1000
    assert report["dropped"] == 0
    for node in ("source", "sink"):
        assert set(report["nodes"][node]) >= {"p50_ms", "p99_ms", "processed", "dropped",
                                              "quarantined"}
    assert 0 < report["end_to_end"]["p50_ms"] < 50


def test_pipeline_reconnects_when_the_source_process_dies_and_returns(uid):
    name = f"rc-{uid}"
    raw = {"name": "rc", "nodes": [
        {"name": "source", "node": "lsl_inlet", "params": {"name": name}},
        {"name": "sink", "node": "pipeline_nodes:Collect"}]}
    pipe = Pipeline(spec.parse(raw, "rc.yaml"), "rc.yaml")
    first = source(name, start=0)
    pipe.start()
    try:
        time.sleep(1.5)
        first.kill()
        first.wait()
        time.sleep(1.0)
        second = source(name, start=100000)
        time.sleep(2.0)
    finally:
        pipe.stop()
    second.kill()
    chunks = pipe.nodes["sink"].chunks
    values = np.concatenate([c.data[:, 0] for c in chunks])
    assert (values < 100000).sum() > 100 and (values >= 100000).sum() > 100
    gaps = [c for c in chunks if c.gap]
    assert len(gaps) == 1 and gaps[0].data[0, 0] >= 100000
    assert pipe.report()["nodes"]["source"]["reconnects"] == 1


def test_cli_reports_pipeline_errors_with_exit_code_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nnodes:\n  - {name: f, node: filter, params: {freqs: [1, 40], "
                   "ordr: 4}}\n")
    result = subprocess.run(["edgert", "run", str(bad), "--duration", "1"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "node 'f'" in result.stderr and "params.ordr" in result.stderr


def test_cli_streams_lists_a_live_stream(uid):
    name = f"ls-{uid}"
    amp = source(name, channels=3)
    try:
        result = subprocess.run(["edgert", "streams", "--json", "--timeout", "2"],
                                capture_output=True, text=True, timeout=60)
    finally:
        amp.kill()
    found = {s["name"]: s for s in json.loads(result.stdout)}
    assert found[name]["channels"] == 3 and found[name]["rate"] == 250.0
