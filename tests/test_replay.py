"""Replay: shared recordings as live LSL streams, determinism, pacing, gaps, and a round trip
replay -> Recorder -> XDF file."""
import time
from dataclasses import replace

import numpy as np
import pytest
import pyxdf

from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.lsl import Inlet
from edgert.streams.recorder import Recorder
from edgert.streams.replay import Replay, chunk_bounds, timeline
from edgert.streams.replay_process import ReplayProcess
from edgert.streams.xdf_read import Recording, read_xdf

INF = float("inf")
SHARED = ["bciess_p300_gusbamp.xdf", "bciess_ssvep_dsi7.xdf", "xdfmodules_clock_resets.xdf",
          "xdfmodules_empty_streams.xdf", "xdfmodules_minimal.xdf"]


class ListSink:
    """A sink that keeps what it is given, for checking exactly what a replay pushed."""

    def __init__(self, info: StreamInfo):
        self.info = info
        self.chunks: list[Chunk] = []

    def push(self, chunk: Chunk) -> None:
        self.chunks.append(chunk)


def renamed(recordings: list[Recording], uid: str) -> list[Recording]:
    """The same streams under names no other test (or run) uses."""
    return [replace(r, info=replace(r.info, name=f"{r.info.name}-{uid}")) for r in recordings]


def receive(inlets: list[Inlet], expected: list[int], seconds: float) -> list[list[Chunk]]:
    got = [[] for _ in inlets]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for inlet, chunks in zip(inlets, got):
            chunk = inlet.pull(0.005)
            if chunk is not None:
                chunks.append(chunk)
        if [sum(map(len, c)) for c in got] == expected:
            break
    return got


def live(replay: Replay, processing=()) -> list[Inlet]:
    """Open the replay's outlets and an inlet on each, so nothing pushed is missed."""
    replay.open()
    inlets = [Inlet(name=r.info.name, processing=processing, max_buflen=600)
              for r in replay.recordings]
    for inlet in inlets:
        assert inlet.open(5.0), f"replayed stream {inlet.describe()} not found"
    for sink in replay.sinks:
        assert sink.wait_for_consumers(5.0)
    return inlets


@pytest.mark.parametrize("filename", SHARED)
def test_shared_recording_replays_as_live_lsl_streams(shared_data, filename, uid):
    recordings = renamed(read_xdf(shared_data / "xdf" / filename), uid)
    replay = Replay(recordings, speed=INF, chunk_size=32)
    inlets = live(replay)
    replay.start()
    try:
        got = receive(inlets, [len(r) for r in recordings], seconds=30)
        assert replay.wait(10)
    finally:
        replay.stop()
    plan = replay.timeline
    for i, (recording, chunks) in enumerate(zip(recordings, got)):
        name = recording.info.name
        assert replay.pushed[name] == len(recording)
        if not len(recording):
            assert chunks == [], f"{name}: an empty stream pushed samples"
            continue
        data = np.concatenate([c.data for c in chunks])
        stamps = np.concatenate([c.timestamps for c in chunks])
        assert data.shape == recording.data.shape, name
        np.testing.assert_array_equal(data, recording.data, err_msg=name)
        np.testing.assert_allclose(stamps, replay.t_start + plan.play[i], rtol=0, atol=1e-7)
        assert np.all(np.diff(stamps) >= 0), f"{name}: replayed timestamps go back"


def test_schedule_is_one_time_ordered_merge_with_string_streams_sample_by_sample(shared_data):
    replay = Replay.from_xdf(shared_data / "xdf" / "bciess_p300_gusbamp.xdf", make_sink=ListSink,
                             speed=INF, chunk_size=20)
    pushes = list(replay.schedule())
    assert np.all(np.diff([p.due for p in pushes]) >= 0)
    sizes = {name: {p.stop - p.start for p in pushes if p.stream == i}
             for i, name in enumerate(replay.pushed)}
    assert sizes == {"g.USBamp-1": {20, 19072 % 20}, "UnityMarkerStream": {1},
                     "PythonResponse": {1}}


def pushed_chunks(path, **kw) -> dict[str, list[Chunk]]:
    replay = Replay.from_xdf(path, make_sink=ListSink, speed=INF, **kw).start()
    assert replay.wait(30)
    replay.stop()
    for sink in replay.sinks:
        for chunk in sink.chunks:
            chunk.timestamps = chunk.timestamps - replay.t_start
    return {sink.info.name: sink.chunks for sink in replay.sinks}


def fingerprint(chunks: dict[str, list[Chunk]]) -> list:
    return [(name, c.seq, len(c), c.gap, c.data.tobytes() if c.data.dtype != object
             else tuple(c.data[:, 0])) for name, cs in chunks.items() for c in cs]


def test_same_seed_pushes_the_same_chunks(shared_data):
    path = shared_data / "xdf" / "bciess_ssvep_dsi7.xdf"
    first = pushed_chunks(path, seed=7, jitter=True, chunk_size=16)
    again = pushed_chunks(path, seed=7, jitter=True, chunk_size=16)
    other = pushed_chunks(path, seed=8, jitter=True, chunk_size=16)
    assert fingerprint(first) == fingerprint(again)
    for name in first:  # relative to each replay's start time, so equal up to rounding
        np.testing.assert_allclose(np.concatenate([c.timestamps for c in first[name]]),
                                   np.concatenate([c.timestamps for c in again[name]]),
                                   rtol=0, atol=1e-8)
    sizes = [len(c) for c in first["DSI7"]]
    assert sizes != [len(c) for c in other["DSI7"]]
    assert min(sizes) >= 1 and max(sizes) <= 31 and len(set(sizes)) > 20
    assert abs(np.mean(sizes) - 16) < 1.5
    assert sum(sizes) == 33002
    assert [len(c) for c in first["Unity_SSVEP"]] == [1] * 258


def test_clock_reset_is_cut_to_one_period_and_flagged(shared_data):
    path = shared_data / "xdf" / "xdfmodules_clock_resets.xdf"
    raw = {r.info.name: r for r in read_xdf(path, sync=False)}
    chunks = pushed_chunks(path, sync=False, chunk_size=10)
    for name, cs in chunks.items():
        stamps = np.concatenate([c.timestamps for c in cs])
        assert np.all(np.diff(stamps) > 0), f"{name}: timestamps not increasing after replay"
        flagged = [i for i, c in enumerate(cs) if c.gap]
        assert len(flagged) == 1, f"{name}: {len(flagged)} gap chunks"
        np.testing.assert_array_equal(np.concatenate([c.data for c in cs]), raw[name].data)
    eeg = chunks["BioSemi"]
    reset = next(i for i, c in enumerate(eeg) if c.gap)
    assert eeg[reset].timestamps[0] - eeg[reset - 1].timestamps[-1] == pytest.approx(0.01)
    before = raw["BioSemi"].timestamps
    n = sum(len(c) for c in eeg[:reset])
    assert before[n] < before[n - 1]  # the flag sits exactly at the backwards jump


def test_long_hole_is_shortened_and_markers_keep_their_place():
    rate, info = 100.0, StreamInfo.make("hole", 1, rate=100.0)
    stamps = np.concatenate([np.arange(200), np.arange(200) + 1200]) / rate  # 10 s hole
    eeg = Recording(info, np.arange(400, dtype=np.float32)[:, None], stamps)
    markers = Recording(StreamInfo.make("events", 1, dtype="string"),
                        np.array([["before"], ["inside"], ["after"]], dtype=object),
                        np.array([1.0, 8.0, 13.0]))
    plan = timeline([eeg, markers], max_gap=1.0)
    np.testing.assert_allclose(np.diff(plan.play[0]), 0.01)
    assert plan.gaps[0].tolist() == [False] * 200 + [True] + [False] * 199
    assert plan.play[1][0] == pytest.approx(1.0)  # before the hole: untouched
    assert plan.play[0][199] < plan.play[1][1] < plan.play[0][200]  # squeezed inside it
    assert plan.play[1][2] - plan.play[0][200] == pytest.approx(1.0)  # after: same offset
    assert plan.gaps[1].tolist() == [False, True, True]
    assert chunk_bounds(plan.gaps[0], 64, None)[3:5] == [(192, 200), (200, 264)]


def test_loop_repeats_with_a_gap_flag_at_each_lap():
    info = StreamInfo.make("loop", 2, rate=100.0)
    data = np.arange(200, dtype=np.float32).reshape(100, 2)
    replay = Replay.from_arrays(info, data, make_sink=ListSink, speed=20.0, chunk_size=25,
                                loop=True).start()
    time.sleep(0.3)
    assert not replay.wait(0)
    replay.stop()
    chunks = replay.sinks[0].chunks
    laps = [i for i, c in enumerate(chunks) if c.gap]
    assert len(laps) >= 3 and laps == list(range(4, 4 * (len(laps) + 1), 4))
    stamps = np.concatenate([c.timestamps for c in chunks])
    np.testing.assert_allclose(np.diff(stamps), 0.01 / 20)
    values = np.concatenate([c.data for c in chunks])
    np.testing.assert_array_equal(values[:400], np.tile(data, (4, 1))[:400])
    assert [c.seq for c in chunks] == list(range(len(chunks)))


@pytest.mark.parametrize("speed", [1.0, 2.5])
def test_real_time_pacing_keeps_spacing_and_local_clock(uid, speed):
    info = StreamInfo.make(f"paced-{uid}", 4, rate=100.0)
    data = np.random.default_rng(0).standard_normal((150, 4)).astype(np.float32)
    replay = Replay.from_arrays(info, data, speed=speed, chunk_size=10)
    inlet, = live(replay, processing=("clocksync",))
    inlet.time_correction(5.0)  # else liblsl measures the offset during the first pull (~0.6 s)
    replay.start()
    chunks, receipts = [], []
    deadline = time.monotonic() + 10
    while sum(map(len, chunks)) < 150 and time.monotonic() < deadline:
        chunk = inlet.pull(0.5)
        if chunk is not None:
            chunks.append(chunk)
            receipts.append(local_clock())
    replay.stop()
    np.testing.assert_array_equal(np.concatenate([c.data for c in chunks]), data)
    stamps = np.concatenate([c.timestamps for c in chunks])
    np.testing.assert_allclose(np.diff(stamps), 0.01 / speed, atol=1e-6)
    lag = np.array(receipts) - np.array([c.timestamps[-1] for c in chunks])
    assert lag.min() > -0.002, "a chunk arrived before its last sample was due"
    assert np.median(lag) < 0.05 and lag.max() < 0.5  # loose: 2 shared cores
    assert receipts[-1] - receipts[0] == pytest.approx(1.4 / speed, abs=0.15)


def test_round_trip_replay_recorder_file(shared_data, tmp_path, uid):
    source = read_xdf(shared_data / "xdf" / "bciess_p300_gusbamp.xdf")
    t0 = source[0].timestamps[0]
    excerpt = renamed([r.window(t0, t0 + 8.5) for r in source], uid)
    assert [len(r) for r in excerpt][0] == 2176 and all(len(r) for r in excerpt)
    replay = Replay(excerpt, speed=8.0, chunk_size=16, jitter=True, seed=3)
    replay.open()
    recorder = Recorder(tmp_path / "round.xdf", [r.info.name for r in excerpt],
                        clock_interval=0.2).start()
    for sink in replay.sinks:
        assert sink.wait_for_consumers(5.0)
    replay.start()
    try:
        assert replay.wait(10)
        deadline = time.monotonic() + 5
        while recorder.counts != replay.pushed and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        recorder.stop()
        replay.stop()
    assert recorder.counts == {r.info.name: len(r) for r in excerpt}
    streams, _ = pyxdf.load_xdf(str(tmp_path / "round.xdf"), dejitter_timestamps=False)
    by_name = {s["info"]["name"][0]: s for s in streams}
    for recording in excerpt:
        stream = by_name[recording.info.name]
        assert int(stream["footer"]["info"]["sample_count"][0]) == len(recording)
        assert len(stream["clock_times"]) >= 3  # first (~0.6 s in), periodic, last
        got = np.asarray(stream["time_series"], dtype=recording.data.dtype)
        np.testing.assert_array_equal(got, recording.data)
        np.testing.assert_allclose(np.diff(stream["time_stamps"]),
                                   np.diff(recording.timestamps) / 8.0, atol=1e-5)
    assert read_xdf(tmp_path / "round.xdf")[0].info.channels == source[0].info.channels


def test_replay_in_its_own_process_streams_everything_and_reports_counts(shared_data, uid):
    recordings = renamed(read_xdf(shared_data / "xdf" / "bciess_ssvep_dsi7.xdf"), uid)
    replay = ReplayProcess(recordings, speed=INF, chunk_size=32)
    replay.open()
    inlets = [Inlet(name=r.info.name, processing=(), max_buflen=600) for r in recordings]
    try:
        for inlet in inlets:
            assert inlet.open(5.0), f"replayed stream {inlet.describe()} not found"
        assert replay.ready(5.0)
        replay.start()
        assert replay.t_start <= local_clock()
        got = receive(inlets, [len(r) for r in recordings], seconds=30)
        assert replay.wait(10)
    finally:
        replay.stop()
    for recording, chunks in zip(recordings, got):
        assert replay.pushed[recording.info.name] == len(recording)
        if len(recording):
            np.testing.assert_array_equal(np.concatenate([c.data for c in chunks]),
                                          recording.data)
    assert not replay._process.is_alive()


def test_replay_process_rejects_bad_options_in_the_caller(shared_data):
    recordings = read_xdf(shared_data / "xdf" / "xdfmodules_minimal.xdf")
    with pytest.raises(ValueError, match="speed"):
        ReplayProcess(recordings, speed=0)
