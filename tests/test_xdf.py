"""XDF files: our writer read back by pyxdf, a recorder killed with -9, LabRecorder's files."""
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import pyxdf

from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.lsl import Outlet
from edgert.streams.recorder import Recorder
from edgert.streams.xdf_read import XdfReadError, read_xdf
from edgert.streams.xdf_write import BOUNDARY_UUID, XdfWriter

ROOT = Path(__file__).resolve().parents[1]

STREAMS = [
    (StreamInfo(name="eeg", type="EEG", channels=("C3", "Cz", "C4", "Pz"),
                units=("uV",) * 4, rate=250.0, dtype="float32", source_id="amp-1"), "float32"),
    (StreamInfo.make("counts", 2, type="Aux", rate=100.0, dtype="int16"), "int16"),
    (StreamInfo.make("pupil", 1, type="Gaze", dtype="float64"), "double64"),
    (StreamInfo.make("markers", 1, type="Markers", dtype="string", source_id="m-1"), "string"),
]


def samples(info: StreamInfo, n: int, t0: float, rng: np.random.Generator) -> Chunk:
    if info.dtype == "string":
        words = np.array(["stim", "", "héllo <&> wörld", "a,b,c"], dtype=object)
        data = words[rng.integers(0, len(words), (n, 1))]
        stamps = t0 + np.sort(rng.uniform(0, 1, n))
    elif info.dtype == "int16":
        data = rng.integers(-32768, 32767, (n, 2), dtype=np.int16)
        stamps = t0 + np.arange(n) / info.rate
    else:
        data = rng.standard_normal((n, info.n_channels)).astype(info.dtype) * 1e3
        stamps = t0 + (np.arange(n) / info.rate if info.rate else np.sort(rng.uniform(0, 1, n)))
    return Chunk(data=data, timestamps=stamps, info=info)


def test_pyxdf_reads_back_values_timestamps_headers_and_footers(tmp_path):
    path, rng, written = tmp_path / "mixed.xdf", np.random.default_rng(1), {}
    with XdfWriter(path) as writer:
        ids = [writer.add_stream(info, created_at=123.5) for info, _ in STREAMS]
        for second in range(25):
            for stream_id, (info, _) in zip(ids, STREAMS):
                chunk = samples(info, 50 if info.rate else 3, 1000.0 + second, rng)
                writer.write(stream_id, chunk)
                written.setdefault(info.name, []).append(chunk)
        writer.write_clock_offset(ids[0], 1001.0, -0.25)
        writer.write_clock_offset(ids[0], 1006.0, -0.25)
    streams, header = pyxdf.load_xdf(str(path), synchronize_clocks=False,
                                     dejitter_timestamps=False)
    assert header["info"]["version"] == ["1.0"]
    assert [s["info"]["name"][0] for s in streams] == [info.name for info, _ in STREAMS]
    for stream, (info, fmt) in zip(streams, STREAMS):
        head = stream["info"]
        assert (head["type"][0], head["channel_format"][0], head["source_id"][0] or "") == (
            info.type, fmt, info.source_id)
        assert int(head["channel_count"][0]) == info.n_channels
        assert float(head["nominal_srate"][0]) == info.rate
        assert float(head["created_at"][0]) == 123.5
        labels = [ch["label"][0] for ch in head["desc"][0]["channels"][0]["channel"]]
        assert labels == list(info.channels)
        data = np.concatenate([c.data for c in written[info.name]])
        stamps = np.concatenate([c.timestamps for c in written[info.name]])
        got = np.asarray(stream["time_series"], dtype=object if fmt == "string" else None)
        assert got.dtype == data.dtype
        np.testing.assert_array_equal(got, data)
        np.testing.assert_array_equal(stream["time_stamps"], stamps)
        footer = stream["footer"]["info"]
        assert int(footer["sample_count"][0]) == len(stamps)
        assert float(footer["first_timestamp"][0]) == stamps[0]
        assert float(footer["last_timestamp"][0]) == stamps[-1]
    units = [ch["unit"][0] for ch in streams[0]["info"]["desc"][0]["channels"][0]["channel"]]
    assert units == ["uV"] * 4
    assert streams[0]["clock_times"] == [1001.0, 1006.0]
    assert streams[0]["clock_values"] == [-0.25, -0.25]
    assert path.read_bytes().count(BOUNDARY_UUID) == 2  # one per 10 s of data


def test_read_xdf_gives_our_types_and_synchronised_timestamps(tmp_path):
    path = tmp_path / "sync.xdf"
    eeg, markers = STREAMS[0][0], STREAMS[3][0]
    rng = np.random.default_rng(2)
    with XdfWriter(path) as writer:
        a, b, _ = writer.add_stream(eeg), writer.add_stream(markers), writer.add_stream(
            StreamInfo.make("silent", 3, rate=10.0))
        chunk = samples(eeg, 500, 50.0, rng)
        writer.write(a, chunk)
        writer.write(b, samples(markers, 5, 50.0, rng))
        for t in (50.0, 52.0):
            writer.write_clock_offset(a, t, 0.5)
    raw, synced = read_xdf(path, sync=False), read_xdf(path)
    assert [r.info for r in raw] == [eeg, markers, StreamInfo.make("silent", 3, rate=10.0)]
    np.testing.assert_array_equal(raw[0].data, chunk.data)
    np.testing.assert_array_equal(raw[0].timestamps, chunk.timestamps)
    np.testing.assert_allclose(synced[0].timestamps, chunk.timestamps + 0.5)
    np.testing.assert_array_equal(raw[0].clock_offsets, [[50.0, 0.5], [52.0, 0.5]])
    assert raw[1].data.dtype == object and isinstance(raw[1].data[0, 0], str)
    assert raw[2].data.shape == (0, 3) and raw[2].data.dtype == np.float32
    assert len(raw[2].timestamps) == 0 and raw[2].clock_offsets.shape == (0, 2)
    part = raw[0].window(50.0, 51.0)
    assert len(part) == 250 and part.timestamps[-1] < 51.0


def test_writer_rejects_bad_chunks_with_the_stream_name(tmp_path):
    with XdfWriter(tmp_path / "bad.xdf") as writer:
        stream_id = writer.add_stream(STREAMS[0][0])
        with pytest.raises(ValueError, match=r"stream 'eeg' expects \(samples, 4\)"):
            writer.write(stream_id, Chunk(np.zeros((3, 2), np.float32), np.zeros(3),
                                          STREAMS[0][0]))
        with pytest.raises(KeyError, match="no stream with id 9"):
            writer.write_clock_offset(9, 0.0, 0.0)
        with pytest.raises(ValueError, match="dtype 'complex64'"):
            writer.add_stream(StreamInfo(name="z", dtype="complex64"))


def test_read_xdf_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.xdf"):
        read_xdf(tmp_path / "missing.xdf")
    bogus = tmp_path / "bogus.xdf"
    bogus.write_bytes(b"EDF+ not an xdf file at all")
    with pytest.raises(XdfReadError, match=r"cannot read XDF file .*bogus\.xdf"):
        read_xdf(bogus)


CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from edgert.streams.recorder import Recorder
rec = Recorder({path!r}, [{name!r}], clock_interval=0.2).start()
while True:
    print(rec.counts[{name!r}], flush=True)
    time.sleep(0.05)
"""


def test_recording_killed_with_sigkill_keeps_every_written_chunk(tmp_path, uid):
    name, path = f"counter-{uid}", tmp_path / "killed.xdf"
    info = StreamInfo.make(name, 2, rate=1000.0)
    outlet, stop = Outlet(info), threading.Event()

    def push():
        i = 0
        while not stop.is_set():
            values = np.arange(i, i + 10, dtype=np.float32)[:, None].repeat(2, axis=1)
            outlet.push(Chunk(values, local_clock() + np.arange(10) / 1000.0, info))
            i += 10
            time.sleep(0.01)

    pusher = threading.Thread(target=push, daemon=True)
    pusher.start()
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path),
                                                                 name=name)],
                             stdout=subprocess.PIPE, text=True)
    try:
        reported, deadline = 0, time.monotonic() + 20
        while reported < 1500 and time.monotonic() < deadline:
            line = child.stdout.readline()
            assert line, "the recorder child died before it was killed"
            reported = int(line)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(5)
    finally:
        stop.set()
        pusher.join()
        child.kill()
    assert child.returncode == -signal.SIGKILL
    assert reported >= 1500
    streams, _ = pyxdf.load_xdf(str(path), synchronize_clocks=False, dejitter_timestamps=False)
    assert "footer" not in streams[0]
    values = streams[0]["time_series"][:, 0]
    assert len(values) >= reported
    np.testing.assert_array_equal(np.diff(values), 1.0)  # every pulled sample, in order
    assert len(streams[0]["clock_times"]) >= 2
    recording, = read_xdf(path)
    assert len(recording) == len(values)


def test_recorder_names_the_stream_it_cannot_find(tmp_path, uid):
    with pytest.raises(LookupError, match=f"name='absent-{uid}'"):
        Recorder(tmp_path / "x.xdf", [f"absent-{uid}"], timeout=0.3).start()
    with pytest.raises(ValueError, match="unknown keys \\['kind'\\]"):
        Recorder(tmp_path / "x.xdf", [{"kind": "EEG"}])


SHARED = {
    "bciess_ssvep_dsi7.xdf": {"DSI7": (33002, 8, "float32", 300.0),
                              "Unity_SSVEP": (258, 1, "string", 0.0)},
    "bciess_p300_gusbamp.xdf": {"g.USBamp-1": (19072, 16, "float32", 256.0),
                                "UnityMarkerStream": (40, 1, "string", 0.0),
                                "PythonResponse": (34, 1, "string", 0.0)},
    "xdfmodules_clock_resets.xdf": {"MyMarkerStream": (175, 1, "string", 0.0),
                                    "BioSemi": (27815, 8, "float32", 100.0)},
    "xdfmodules_empty_streams.xdf": {
        "Empty data stream: test stream 0 counter": (0, 1, "float32", 1.0),
        "Data stream: test stream 0 counter": (10, 1, "int32", 1.0),
        "ctrl": (1, 1, "string", 0.0),
        "Empty marker stream: test stream 0 counter": (0, 1, "string", 0.0)},
    "xdfmodules_minimal.xdf": {"SendDataC": (9, 3, "int16", 10.0),
                               "SendDataString": (9, 1, "string", 10.0)},
}


@pytest.mark.parametrize("filename", sorted(SHARED))
def test_read_xdf_reads_every_shared_recording(shared_data, filename):
    recordings = read_xdf(shared_data / "xdf" / filename)
    got = {r.info.name: (len(r), r.info.n_channels, r.info.dtype, r.info.rate)
           for r in recordings}
    assert got == SHARED[filename]
    for r in recordings:
        assert r.data.shape == (len(r), r.info.n_channels)
        assert r.data.dtype == (object if r.info.dtype == "string" else r.info.dtype)
        assert np.all(np.diff(r.timestamps) >= 0), f"{r.info.name}: timestamps go back"
        if r.info.dtype == "string" and len(r):
            assert all(isinstance(v, str) for v in r.data[:, 0])


def test_shared_recordings_details(shared_data):
    xdf = shared_data / "xdf"
    p300 = {r.info.name: r for r in read_xdf(xdf / "bciess_p300_gusbamp.xdf")}
    eeg = p300["g.USBamp-1"]
    assert eeg.info.channels[:3] == ("F3", "Fz", "F4") and eeg.info.channels[-1] == "Pz"
    assert eeg.info.units[0] == "microvolts" and len(eeg.clock_offsets) == 15
    assert p300["UnityMarkerStream"].data[1, 0].startswith("p300,m,16,1")
    empty = {r.info.name: r for r in read_xdf(xdf / "xdfmodules_empty_streams.xdf")}
    assert empty["ctrl"].data[0, 0] == '{"state": 2}'
    np.testing.assert_array_equal(empty["Data stream: test stream 0 counter"].data[:, 0],
                                  np.arange(10))
    assert all(len(r.clock_offsets) == 7 for r in empty.values())
    raw = {r.info.name: r for r in read_xdf(xdf / "xdfmodules_clock_resets.xdf", sync=False)}
    for r in raw.values():  # the reboot: one backwards jump of ~650000 s in every stream
        jumps = np.diff(r.timestamps)
        assert (jumps < 0).sum() == 1 and jumps.min() < -600000
    assert len(raw["BioSemi"].clock_offsets) == 115
