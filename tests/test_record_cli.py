"""Recording inside a pipeline and from the command line; replay from the command line."""
import subprocess
import time

import numpy as np
import pyxdf

from edgert.runtime import spec
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.xdf_read import read_xdf


def test_recorder_node_keeps_every_chunk_nan_included(tmp_path):
    path = tmp_path / "rec" / "session.xdf"
    raw = {"name": "rec", "nodes": [
        {"name": "eeg", "node": "pipeline_nodes:Feed"},
        {"name": "mk", "node": "pipeline_nodes:Feed"},
        {"name": "rec", "node": "xdf_recorder",
         "params": {"path": str(path), "inputs": ["eeg", "markers"]}}],
        "edges": [{"from": "eeg", "to": "rec.eeg"}, {"from": "mk", "to": "rec.markers"}]}
    pipe = Pipeline(spec.parse(raw, "rec.yaml"), "rec.yaml")
    eeg = StreamInfo.make("eeg", 3, type="EEG", rate=100.0, units=("uV",) * 3)
    mk = StreamInfo(name="cues", type="Markers", channels=("label",), dtype="string")
    data = np.arange(300, dtype=np.float32).reshape(100, 3)
    data[50, 1] = np.nan
    t0 = local_clock()
    pipe.start()
    for i in range(0, 100, 10):
        pipe.nodes["eeg"].queue.put(Chunk(data[i:i + 10], t0 + np.arange(i, i + 10) / 100, eeg))
    pipe.nodes["mk"].queue.put(Chunk(np.array([["left"]], object), np.array([t0 + 0.25]), mk))
    time.sleep(0.5)
    pipe.stop()
    assert pipe.report()["quarantined"] == {}
    streams, _ = pyxdf.load_xdf(str(path), synchronize_clocks=False, dejitter_timestamps=False)
    by_name = {s["info"]["name"][0]: s for s in streams}
    np.testing.assert_array_equal(by_name["eeg"]["time_series"], data)
    np.testing.assert_allclose(by_name["eeg"]["time_stamps"], t0 + np.arange(100) / 100)
    assert by_name["cues"]["time_series"] == [["left"]]
    assert len(by_name["eeg"]["clock_times"]) >= 1 and by_name["eeg"]["clock_values"][0] == 0
    assert "footer" in by_name["eeg"]


def test_cli_replays_a_labrecorder_file_and_records_it_back(tmp_path, shared_data):
    source = shared_data / "xdf" / "bciess_ssvep_dsi7.xdf"
    out = tmp_path / "back.xdf"
    player = subprocess.Popen(["edgert", "replay", str(source), "--speed", "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2.0)
        rec = subprocess.run(["edgert", "record", str(out), "--stream", "DSI7", "--duration",
                              "3"], capture_output=True, text=True, timeout=60)
    finally:
        player.terminate()
        player.wait(10)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    original = {r.info.name: r for r in read_xdf(source)}["DSI7"]
    got = {r.info.name: r for r in read_xdf(out)}["DSI7"]
    assert got.info.n_channels == 8 and got.info.rate == 300
    assert len(got) > 1000
    start = np.flatnonzero((original.data == got.data[0]).all(axis=1))[0]
    np.testing.assert_array_equal(got.data, original.data[start:start + len(got)])
    span = original.timestamps[start + len(got) - 1] - original.timestamps[start]
    ratio = (got.timestamps[-1] - got.timestamps[0]) / span
    assert abs(ratio - 0.5) < 0.01, "played at twice the speed, keeping the original spacing"


def test_cli_replay_names_a_missing_file():
    result = subprocess.run(["edgert", "replay", "/nonexistent/file.xdf"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "/nonexistent/file.xdf" in result.stderr
