"""Faults seen from the outside, each fixed and held here with real processes and sockets:
outlets a client can recover after a restart, malformed frames counted once and cheaply,
future timestamps counted as clock faults, replays never stamped ahead of the clock, the
recorder keeping a stream's whole description, and every lost message counted."""
import os
import signal
import socket
import subprocess
import time

import numpy as np
import pylsl
import pyxdf
import pytest
import zmq

from test_cli_errors import Amplifier
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock, wire
from edgert.streams.recorder import Recorder
from edgert.streams.replay import Replay
from edgert.streams.zmq_link import Publisher, Puller, Subscriber, free_endpoint


def _passthrough(uid: str) -> subprocess.Popen:
    return subprocess.Popen(["edgert", "run", "passthrough", "--quiet", "--set",
                             f"source.name=amp-{uid}", "--set", f"sink.name=out-{uid}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _pull_some(inlet: pylsl.StreamInlet, seconds: float) -> int:
    got, end = 0, time.monotonic() + seconds
    while time.monotonic() < end and got < 50:
        samples, _ = inlet.pull_chunk(timeout=0.5)
        got += len(samples)
    return got


def test_a_plain_lsl_inlet_resumes_after_the_pipeline_is_killed_and_restarted(uid):
    amp = Amplifier(f"amp-{uid}")
    first = _passthrough(uid)
    try:
        found = pylsl.resolve_byprop("name", f"out-{uid}", timeout=30)
        assert found, "the pipeline's outlet never appeared"
        assert found[0].source_id() == f"passthrough/sink@{socket.gethostname()}"
        inlet = pylsl.StreamInlet(found[0], recover=True)
        assert _pull_some(inlet, 10) > 0
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        second = _passthrough(uid)
        try:
            assert _pull_some(inlet, 40) > 0, "the inlet did not recover the restarted outlet"
        finally:
            second.send_signal(signal.SIGINT)
            second.wait(20)
    finally:
        if first.poll() is None:
            first.kill()
        amp.close()


def _zmq_pipeline(tmp_path, src: str, dst: str) -> Pipeline:
    spec = tmp_path / "relay.yaml"
    spec.write_text(f"""name: relay
nodes:
  - {{name: src, node: zmq_in, params: {{endpoint: "{src}", pattern: pull}}}}
  - {{name: dst, node: zmq_out, params: {{endpoint: "{dst}", pattern: push}}}}
""")
    return Pipeline.from_yaml(spec)


def _chunk(seq: int, ahead: float = 0.0) -> Chunk:
    info = StreamInfo.make("eeg", 2, rate=100.0)
    stamps = local_clock() + ahead - np.arange(4)[::-1] / 100.0
    return Chunk(np.full((4, 2), seq, np.float32), stamps, info, seq)


def _relay(tmp_path, messages: list[list[bytes]], expect: int) -> tuple[list[Chunk], dict]:
    src, dst = free_endpoint(), free_endpoint()
    with Puller(dst) as out:
        pipe = _zmq_pipeline(tmp_path, src, dst)
        pipe.start()
        push = zmq.Context.instance().socket(zmq.PUSH)
        push.connect(src)
        try:
            for frames in messages:
                push.send_multipart(frames)
            got = []
            while len(got) < expect and (chunk := out.pull(timeout=10)) is not None:
                got.append(chunk)
        finally:
            push.close(linger=0)
            pipe.stop()
    return got, pipe.report()


def test_malformed_frames_are_counted_once_everywhere_and_good_ones_go_through(tmp_path):
    good = [wire.encode(_chunk(k)) for k in range(40)]
    header, payload = [bytes(f) for f in good[0]]
    bad = [[header, payload[:-4]], [b"\xc1", payload], [header], [b"", b""]] * 10
    mixed = [frames for pair in zip(bad, good) for frames in pair]  # a good one last: all seen
    got, report = _relay(tmp_path, mixed, len(good))
    assert [c.seq for c in got] == list(range(40)), "a good chunk was lost beside bad ones"
    assert report["nodes"]["src"]["quarantined"] == 40
    assert report["quarantined"] == {"src": {"wire": 40}}
    assert report["nodes"]["src"]["processed"] == 40


def test_chunks_stamped_ahead_of_the_clock_are_clock_faults_not_latencies(tmp_path):
    messages = [wire.encode(_chunk(k, ahead=20.0 if k % 2 else 0.0)) for k in range(10)]
    got, report = _relay(tmp_path, messages, 10)
    assert len(got) == 10, "a chunk with a clock fault is still delivered"
    assert report["nodes"]["src"]["clock_faults"] == 5 and report["clock_faults"] == 5
    e2e = report["end_to_end"]
    assert e2e["count"] == 5 and e2e["clock_faults"] == 5
    assert 0 <= e2e["p50_ms"] < 5000 and e2e["max_ms"] >= e2e["p50_ms"]


class StampedSink:
    """Keeps each chunk with the clock at the moment it was pushed."""

    def __init__(self, info: StreamInfo):
        self.info, self.pushed = info, []

    def push(self, chunk: Chunk) -> None:
        self.pushed.append((chunk, local_clock()))


@pytest.mark.parametrize("loop", [False, True])
def test_replay_at_infinite_speed_is_never_stamped_ahead_of_the_clock(loop):
    info = StreamInfo.make("fast", 1, rate=100.0)
    replay = Replay.from_arrays(info, np.arange(1000, dtype=np.float32)[:, None],
                                make_sink=StampedSink, speed=float("inf"), chunk_size=50,
                                loop=loop)
    replay.start()
    deadline = time.monotonic() + 10
    while len(replay.open()[0].pushed) < (60 if loop else 20) and time.monotonic() < deadline:
        time.sleep(0.01)
    replay.stop()
    pushed = replay.sinks[0].pushed
    assert all(chunk.timestamps[-1] <= at for chunk, at in pushed)
    lap = [c for c, _ in pushed[:20]]
    stamps = np.concatenate([c.timestamps for c in lap])
    np.testing.assert_allclose(np.diff(stamps), 0.01, atol=1e-9)
    if loop:
        assert pushed[20][0].gap and not pushed[21][0].gap


def test_the_recorder_keeps_the_streams_whole_description(tmp_path, uid):
    info = pylsl.StreamInfo(f"cap-{uid}", "EEG", 2, 100, "float32", f"cap-{uid}")
    desc = info.desc()
    desc.append_child_value("manufacturer", "Brain Products")
    cap = desc.append_child("cap")
    cap.append_child_value("name", "actiCAP 64")
    cap.append_child_value("size", "58")
    desc.append_child("reference").append_child_value("label", "FCz")
    channels = desc.append_child("channels")
    for label in ("C3", "C4"):
        channels.append_child("channel").append_child_value("label", label)
    outlet = pylsl.StreamOutlet(info)
    path = tmp_path / "desc.xdf"
    with Recorder(path, [f"cap-{uid}"]):
        for _ in range(20):
            outlet.push_chunk(np.zeros((5, 2), np.float32).tolist())
            time.sleep(0.02)
    del outlet
    streams, _ = pyxdf.load_xdf(str(path))
    saved = streams[0]["info"]["desc"][0]
    assert saved["manufacturer"] == ["Brain Products"]
    assert saved["cap"][0]["name"] == ["actiCAP 64"] and saved["cap"][0]["size"] == ["58"]
    assert saved["reference"][0]["label"] == ["FCz"]
    assert [c["label"][0] for c in saved["channels"][0]["channel"]] == ["C3", "C4"]
    assert streams[0]["info"]["source_id"] == [f"cap-{uid}"]
    assert len(streams[0]["time_stamps"]) == 100


def test_a_slow_subscriber_counts_every_message_it_lost():
    info = StreamInfo.make("flood", 256, rate=1000.0)
    sent = 6000
    with Publisher(free_endpoint()) as pub, Subscriber(pub.endpoint) as sub:
        time.sleep(0.5)  # the subscription reaches the publisher
        for seq in range(sent):
            pub.push(Chunk(np.zeros((1, 256), np.float32), np.array([local_clock()]), info,
                           seq))
        received = 0
        while sub.pull(timeout=0.5) is not None:
            received += 1
        pub.push(Chunk(np.zeros((1, 256), np.float32), np.array([local_clock()]), info, sent))
        assert sub.pull(timeout=5) is not None
        received += 1
    assert received >= 200, "both high-water marks hold at least hwm messages each"
    assert received + sub.missed == sent + 1, "every message lost is counted"


def test_the_reliability_bench_faults_and_hostile_inputs_hold():
    from edgert.benchmarks.reliability import QUICK, bad_and_clock, hostile, source_restart

    reject, burst, clock = bad_and_clock(QUICK)
    assert burst["survived"] and burst["counted_once"]
    assert burst["rejected_counted"] == burst["expected"]
    assert clock["survived"] and clock["clock_faults"] == clock["expected"]
    assert 0 < reject["good_after_none_ms_p50"] <= reject[f"good_after_{QUICK.reject_k}_bad_ms_p50"]
    found = hostile(QUICK)
    assert found["crashed"] == 0 and found["refused"] + found["decoded"] == found["tried"]
    assert found["peak_bytes_max"] < 1 << 20
    for kind in ("zmq", "lsl"):
        fault = source_restart(kind)
        assert fault["survived"] and fault["lost_before_fault"] == 0, (kind, fault)


@pytest.mark.parametrize("policy", ["continue", "restart", "stop"])
def test_a_node_that_raises_follows_its_on_error_policy(policy):
    from pipeline_nodes import Flaky
    from test_pipeline import FEED, SINK, build, chunks_of, run_through

    Flaky.starts = 0
    pipe = build([FEED, {"name": "flaky", "node": "pipeline_nodes:Flaky",
                         "params": {"every": 3}, "on_error": policy}, SINK])
    report = run_through(pipe, chunks_of(np.zeros((90, 4), np.float32)), settle=1.0)
    errors = report["quarantined"]["flaky"]["error:RuntimeError"]
    delivered = len(pipe.nodes["sink"].chunks)
    if policy == "continue":
        assert errors == 3 and delivered == 6 and Flaky.starts == 1
    elif policy == "restart":  # at most one restart per back-off interval, never a sleep
        restarts = report["nodes"]["flaky"]["restarts"]
        assert 1 <= restarts <= errors and Flaky.starts == restarts + 1
        assert errors >= 3 and delivered == 9 - errors
        assert max(c.trace[-1][2] for c in pipe.nodes["sink"].chunks) - \
            min(c.trace[0][1] for c in pipe.nodes["sink"].chunks) < 0.1, "a restart slept"
    else:
        assert errors == 1 and delivered == 2
        assert "node 'flaky' raised RuntimeError" in pipe.fatal and "on_error: stop" in pipe.fatal


def test_a_full_disk_ends_the_recording_not_the_pipeline(tmp_path, uid):
    """`edgert run` with a 64 KiB file-size limit: the recorder stops at the limit, says so,
    counts what it could not write, and the pipeline's other sink keeps receiving."""
    import json
    import resource

    spec = tmp_path / "rec.yaml"
    spec.write_text(f"""name: rec
nodes:
  - {{name: src, node: lsl_inlet, params: {{name: amp-{uid}}}}}
  - {{name: rec, node: xdf_recorder, params: {{path: {tmp_path / 'out.xdf'}}}}}
  - {{name: out, node: lsl_outlet, params: {{name: copy-{uid}}}}}
edges:
  - {{from: src, to: rec}}
  - {{from: src, to: out}}
""")
    limit = 64 * 1024
    amp = Amplifier(f"amp-{uid}", rate=1000.0)
    try:
        done = subprocess.run(
            ["edgert", "run", str(spec), "--quiet", "--duration", "6", "--report",
             str(tmp_path / "r.json")], capture_output=True, text=True, timeout=120,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    finally:
        amp.close()
    report = json.loads((tmp_path / "r.json").read_text())
    rec, out = report["nodes"]["rec"], report["nodes"]["out"]
    assert done.returncode == 1 and "recording to" in done.stderr + done.stdout
    assert rec["failed"] and rec["unrecorded"] > 0 and rec["samples"] > 0
    assert out["processed"] == report["nodes"]["src"]["processed"], "the other sink went on"
    assert len(pyxdf.load_xdf(str(tmp_path / "out.xdf"))[0][0]["time_stamps"]) > 0


def test_a_silent_source_is_reported_while_the_other_streams_go_on(tmp_path, uid):
    spec = tmp_path / "two.yaml"
    spec.write_text(f"""name: two
nodes:
  - {{name: a, node: lsl_inlet, params: {{name: a-{uid}}}}}
  - {{name: b, node: lsl_inlet, params: {{name: b-{uid}}}}}
  - {{name: out_a, node: lsl_outlet, params: {{name: a-copy-{uid}}}}}
  - {{name: out_b, node: lsl_outlet, params: {{name: b-copy-{uid}}}}}
edges:
  - {{from: a, to: out_a}}
  - {{from: b, to: out_b}}
""")
    a, b = Amplifier(f"a-{uid}"), Amplifier(f"b-{uid}")
    pipe = Pipeline.from_yaml(spec)
    try:
        pipe.start()
        time.sleep(1.5)
        a.silent = True
        during = pipe.report()["nodes"]["b"]["processed"]
        time.sleep(3.0)
        assert pipe.report()["nodes"]["b"]["processed"] > during + 20, "b went on"
        a.silent = False
        time.sleep(1.5)
    finally:
        pipe.stop()
        a.close()
        b.close()
    nodes = pipe.report()["nodes"]
    assert nodes["a"]["silences"] == 1 and 2.5 < nodes["a"]["longest_silence_s"] < 5
    assert nodes["b"]["silences"] == 0


def test_a_stalled_sink_behind_a_latest_edge_stalls_nothing_else():
    from test_pipeline import FEED, SINK, build, chunks_of, run_through

    stalled = {"name": "stalled", "node": "pipeline_nodes:Slow", "params": {"seconds": 2.0}}
    pipe = build([FEED, SINK, stalled],
                 [{"from": "src", "to": "sink"},
                  {"from": "src", "to": "stalled", "policy": "latest", "capacity": 1}])
    t0 = time.monotonic()
    report = run_through(pipe, chunks_of(np.zeros((500, 4), np.float32)), settle=0.5)
    assert len(pipe.nodes["sink"].chunks) == 50, "the other sink got every chunk"
    assert time.monotonic() - t0 < 10, "the stalled sink held nothing else up"
    assert report["nodes"]["stalled"]["dropped"] >= 45 and report["dropped"] >= 45


def test_a_source_clock_jumping_back_marks_a_gap_and_is_counted(tmp_path):
    before = [wire.encode(_chunk(k)) for k in range(5)]
    reset = []
    for k in range(5, 10):
        chunk = _chunk(k, ahead=-100.0)  # the sender's clock went back 100 s
        reset.append(wire.encode(chunk))
    got, report = _relay(tmp_path, before + reset, 10)
    assert [c.gap for c in got] == [False] * 5 + [True] + [False] * 4
    assert report["nodes"]["src"]["clock_jumps"] == 1 and report["clock_faults"] == 0
