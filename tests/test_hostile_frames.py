"""Hostile frames against a live `zmq_in`, each one an attack that once silenced, stalled or
poisoned a pipeline: a source never dies or goes quiet for one frame, another stream's chunks
never change what this one is held to, kept bad chunks never pin their frames, no header value
reaches the pipeline that the wire format does not allow, and the CURVE rule cannot be
side-stepped by endpoint syntax."""
import os
import pickle
import time

import msgpack
import numpy as np
import pytest
import torch
import zmq
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from edgert.cli.commands import app
from edgert.runtime.pipeline import Pipeline
from edgert.runtime.quarantine import KEEP_BYTES
from edgert.streams import Chunk, StreamInfo, local_clock, wire
from edgert.streams.zmq_link import Puller, free_endpoint
from edgert.streams.zmq_security import exposed

INFO = StreamInfo.make("eeg", 2, rate=100.0)


def good(seq: int, info: StreamInfo = INFO, ahead: float = 0.0) -> list[bytes]:
    stamps = local_clock() + ahead - np.arange(4)[::-1] / 100.0
    return [bytes(f) for f in wire.encode(Chunk(np.full((4, 2), seq, np.float32), stamps,
                                                 info, seq))]


def edit(frames: list[bytes], **fields) -> list[bytes]:
    """The message with header fields replaced (`stream_X` for stream.X)."""
    header = msgpack.unpackb(frames[0])
    for key, value in fields.items():
        if key.startswith("stream_") and isinstance(header.get("stream"), dict):
            header["stream"][key.removeprefix("stream_")] = value
        elif not key.startswith("stream_"):
            header[key] = value
    return [msgpack.packb(header), frames[1]]


class Relay:
    """`zmq_in` (pull or sub) -> `zmq_out` push, started; `send` feeds it from a real socket,
    `collect` reads what came out."""

    def __init__(self, tmp_path, pattern: str = "pull", extra: str = ""):
        self.src, dst = free_endpoint(), free_endpoint()
        self.out = Puller(dst)
        spec = tmp_path / "relay.yaml"
        spec.write_text(f"""name: relay
nodes:
  - {{name: src, node: zmq_in, params: {{endpoint: "{self.src}", pattern: {pattern}{extra}}}}}
  - {{name: dst, node: zmq_out, params: {{endpoint: "{dst}", pattern: push}}}}
""")
        self.pipe = Pipeline.from_yaml(spec)
        ctx = zmq.Context.instance()
        if pattern == "sub":  # the publisher binds; the pipeline's SUB connects
            self.sock = ctx.socket(zmq.PUB)
            self.sock.bind(self.src)
        self.pipe.start()
        if pattern == "pull":
            self.sock = ctx.socket(zmq.PUSH)
            self.sock.connect(self.src)
        else:
            self._joined()
        self.topic = pattern == "sub"

    def _joined(self) -> None:
        """Publish a probe stream until the subscriber hears it (ZeroMQ's slow joiner)."""
        probe = StreamInfo.make("probe", 2, rate=100.0)
        for k in range(200):
            self.sock.send_multipart([b"probe", *good(k, probe)])
            if self.out.pull(timeout=0.05) is not None:
                while self.out.pull(timeout=0.2) is not None:
                    pass
                return
        raise AssertionError("the pipeline's subscriber never joined")

    def send(self, frames: list[bytes]) -> None:
        if self.topic:
            name = msgpack.unpackb(frames[0]).get("stream", {}).get("name", "eeg")
            frames = [str(name).encode(), *frames]
        self.sock.send_multipart(frames)

    def collect(self, n: int, timeout: float = 10.0) -> list[Chunk]:
        got, end = [], time.monotonic() + timeout
        while len(got) < n and time.monotonic() < end:
            chunk = self.out.pull(timeout=0.5)
            if chunk is not None and chunk.info.name != "probe":
                got.append(chunk)
        return got

    def finish(self) -> dict:
        self.sock.close(linger=0)
        self.pipe.stop()
        self.out.close()
        report = self.pipe.report()
        report["shortfalls"] = self.pipe.shortfalls(report)
        return report


ONE_FRAME_ATTACKS = {
    "stream.dtype not a dtype": lambda f: edit(f, stream_dtype="fLoat32"),
    "error reply on a receiving socket": lambda f: [msgpack.packb({"v": 1, "error": "x"}), b""],
    "shape [0, 2**63]": lambda f: edit(f, shape=[0, 2**63], dtype="float32"),
    "shape [0, 2**40, 2**40]": lambda f: edit(f, shape=[0, 2**40, 2**40]),
    "NaN t0": lambda f: edit(f, t0=float("nan")),
    "Inf rate": lambda f: edit(f, rate=float("inf")),
    "Inf stream.rate": lambda f: edit(f, stream_rate=float("inf")),
    "NaN timestamp": lambda f: edit(f, timestamps=[1.0, float("nan"), 2.0, 3.0]),
    "tiny rate": lambda f: edit(f, rate=1e-320),
    "huge t0": lambda f: edit(f, t0=1e300),
    "negative seq": lambda f: edit(f, seq=-1),
    "NaN trace": lambda f: edit(f, trace=[["x", float("nan"), 1.0]]),
    "seq beyond int64": lambda f: edit(f, seq=2**64 - 1),
    "a name of a million characters": lambda f: edit(f, stream_name="e" * 10**6),
    "a million channel labels": lambda f: edit(f, stream_channels=["c"] * 10**6),
    "a trace of ten thousand stages": lambda f: edit(f, trace=[["s", 1.0, 1.0]] * 10**4),
}


@pytest.mark.parametrize("attack", sorted(ONE_FRAME_ATTACKS))
@pytest.mark.parametrize("pattern", ["pull", "sub"])
def test_one_bad_frame_never_silences_the_source(tmp_path, attack, pattern):
    relay = Relay(tmp_path, pattern)
    try:
        for k in range(20):
            relay.send(good(k))
        relay.send(ONE_FRAME_ATTACKS[attack](good(99)))
        for k in range(20, 120):
            relay.send(good(k))
        got = relay.collect(120)
    finally:
        report = relay.finish()
    assert [c.seq for c in got] == list(range(120)), f"{120 - len(got)} good chunks lost"
    assert report["quarantined"] == {"src": {"wire": 1}}, report["quarantined"]
    assert report["shortfalls"] == [] and report["end_to_end"]["p99_ms"] < 1e4
    assert np.isfinite(report["end_to_end"]["max_ms"])


def test_a_foreign_stream_changes_nothing_for_this_one(tmp_path):
    """An int8 frame of another stream stamped 10 s old, then good chunks and a second,
    legitimate marker stream on the same SUB socket: every chunk of both arrives."""
    relay = Relay(tmp_path, "sub")
    foreign = StreamInfo.make("other", 2, rate=100.0, dtype="int8")
    markers = StreamInfo("markers", "Markers", ("m",), rate=0.0, dtype="string")
    try:
        for k in range(5):
            relay.send(good(k))
        stamps = local_clock() - 10 - np.arange(3)[::-1] / 100
        relay.send([bytes(f) for f in wire.encode(Chunk(np.ones((3, 2), np.int8), stamps,
                                                        foreign, 0, gap=True))])
        for k in range(5, 105):
            relay.send(good(k))
            if k % 20 == 0:
                relay.send([bytes(f) for f in wire.encode(Chunk(
                    np.array([["go"]], dtype=object), np.array([local_clock()]), markers, k))])
        got = relay.collect(111)
    finally:
        report = relay.finish()
    eeg = [c.seq for c in got if c.info.name == "eeg"]
    assert eeg == list(range(105)), f"{105 - len(eeg)} of this stream's chunks lost"
    assert len([c for c in got if c.info.name == "markers"]) == 5
    assert len([c for c in got if c.info.name == "other"]) == 1, "a stream of its own"
    assert report["nodes"]["src"]["clock_jumps"] == 0, "another stream's stamps are not a jump"
    assert report["quarantined"] == {}


def test_a_chunk_stamped_in_the_future_does_not_restart_the_next(tmp_path):
    relay = Relay(tmp_path)
    try:
        relay.send(good(0))
        relay.send(good(1, ahead=30.0))
        for k in range(2, 10):
            relay.send(good(k))
        got = relay.collect(10)
    finally:
        report = relay.finish()
    assert len(got) == 10 and not any(c.gap for c in got[2:]), "a good chunk marked a gap"
    assert report["nodes"]["src"]["clock_jumps"] == 0
    assert report["nodes"]["src"]["clock_faults"] == 1


def test_a_clock_reset_chunk_keeps_its_own_latency_out_of_max(tmp_path):
    relay = Relay(tmp_path)
    try:
        for k in range(10):
            relay.send(good(k, ahead=-100.0 if k == 5 else 0.0))
        got = relay.collect(10)
    finally:
        report = relay.finish()
    assert len(got) == 10 and report["nodes"]["src"]["clock_jumps"] == 1
    assert report["nodes"]["src"]["max_ms"] < 50_000, "the reset chunk's 100 s was timed"


def test_kept_bad_chunks_never_pin_their_frames(tmp_path):
    """150 NaN frames of 4 MiB: what the quarantine keeps is a bounded copy of each."""
    relay = Relay(tmp_path)
    big = StreamInfo.make("big", 1024, rate=100.0)
    data = np.full((1024, 1024), np.nan, np.float32)
    try:
        stamps = local_clock() - np.arange(1024)[::-1] / 100.0
        frames = [bytes(f) for f in wire.encode(Chunk(data, stamps, big, 0))]
        for _ in range(150):
            relay.send(frames)
        relay.send(good(0))
        assert len(relay.collect(1)) == 1
    finally:
        relay.finish()
    kept = relay.pipe.scheduler.quarantine.kept
    assert len(kept) == 100 and all(k[2] == "nonfinite" for k in kept)
    assert all(k[3].data.nbytes <= KEEP_BYTES and k[3].data.base is None for k in kept)
    assert sum(k[3].data.nbytes + k[3].timestamps.nbytes for k in kept) < 8 << 20


def test_a_frame_over_the_size_limit_drops_its_sender_not_the_pipeline(tmp_path):
    relay = Relay(tmp_path, extra=", max_message_mb: 1")
    try:
        stamps = local_clock() - np.arange(512)[::-1] / 100.0
        frames = wire.encode(Chunk(np.zeros((512, 1024), np.float32), stamps,
                                   StreamInfo.make("big", 1024, rate=100.0), 0))
        relay.send([bytes(f) for f in frames])  # 2 MiB: the sender is disconnected
        other = zmq.Context.instance().socket(zmq.PUSH)
        other.connect(relay.src)
        for k in range(10):
            other.send_multipart(good(k))
        got = relay.collect(10)
        other.close(linger=0)
    finally:
        relay.finish()
    assert [c.seq for c in got] == list(range(10)) and all(c.info.name == "eeg" for c in got)


def test_a_rejected_frame_is_a_wire_error_and_costs_no_wait(tmp_path):
    """1000 bad frames then one good one: the good one is out within a second (a source that
    slept 0.1 s per bad frame needed 100 s)."""
    relay = Relay(tmp_path)
    try:
        for k in range(1000):
            relay.send(ONE_FRAME_ATTACKS["error reply on a receiving socket"](good(k)))
        relay.send(good(0))
        t0 = time.monotonic()
        got = relay.collect(1, timeout=5)
        waited = time.monotonic() - t0
    finally:
        report = relay.finish()
    assert len(got) == 1 and waited < 5
    assert report["quarantined"] == {"src": {"wire": 1000}}


header_values = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(), st.text(max_size=12),
    st.binary(max_size=12), st.lists(st.integers(-2, 2**64 - 1), max_size=9),
    st.lists(st.floats(), max_size=5), st.dictionaries(st.text(max_size=4), st.integers(-9, 9),
                                                       max_size=2))
FIELDS = ["v", "seq", "gap", "dtype", "shape", "t0", "rate", "timestamps", "trace", "error",
          "stream_name", "stream_type", "stream_channels", "stream_units", "stream_rate",
          "stream_dtype", "stream_source_id", "stream"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), header_values, min_size=1, max_size=4))
def test_any_header_value_is_decoded_into_a_sane_chunk_or_refused_by_name(fields):
    """Every field, every value: either a WireError naming a field, or a chunk whose every
    value the rest of the pipeline can rely on (known dtype, finite stamps, shape = data)."""
    frames = edit(good(1), **fields)
    try:
        chunk = wire.decode(frames)
    except wire.WireError as e:
        assert e.field and str(e)
        return
    assert chunk.info.dtype in (*wire.DTYPES, "string")
    assert np.isfinite(chunk.timestamps).all() and len(chunk.timestamps) == len(chunk.data)
    assert np.isfinite(chunk.info.rate) and chunk.info.rate >= 0 and 0 <= chunk.seq < 2**63
    assert all(np.isfinite([a, b]).all() for _, a, b in chunk.trace)


@pytest.mark.parametrize("endpoint,off_machine", [
    ("tcp://127.0.0.1:0;192.0.2.7:5555", True),   # libzmq's source-address form
    ("tcp://127.0.0.1:0;127.0.0.1:5555", False),
    ("tipc://{5560,0,0}", True),
    ("pgm://eth0;239.192.1.1:5555", True),
    ("udp://127.0.0.1:5555", True),
    ("ws://127.0.0.1:5555", True),
    ("tcp://127.attacker.example:5555", True),     # a name that only looks like loopback
    ("tcp://[::1]:5555", False),
    ("tcp://localhost:5555", False),
    ("nonsense", True),
])
def test_exposed_judges_the_destination_and_the_transport(endpoint, off_machine):
    assert exposed(endpoint) is off_machine


class Ran:
    """A pickle that, loaded unsafely, writes a marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("method", ["avde", "bolt", "btta_dg", "cogmoe", "janusvln",
                                    "reference"])
@pytest.mark.parametrize("form", ["torch", "pickle"])
def test_a_crafted_checkpoint_runs_nothing_and_is_named(tmp_path, method, form):
    marker = tmp_path / "ran"
    path = tmp_path / "crafted.pt"
    payload = {"config": Ran(str(marker)), "state": {}}
    if form == "torch":
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload))
    done = CliRunner().invoke(app, ["export", method, "--checkpoint", str(path), "--out",
                                    str(tmp_path / "b")])
    assert not marker.exists(), "code in the checkpoint ran"
    assert done.exit_code == 2 and str(path) in done.stderr, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert "nothing in it was run" in done.stderr


stamp_offsets = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                          st.floats(-1e6, 1e6), st.just(0.0))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(stamp_offsets, min_size=1, max_size=5), min_size=1, max_size=5))
@example([[-1.797693134862316e+305]])  # found: a latency of 1.8e308 ms overflowed to Inf
def test_any_timestamps_from_a_source_leave_the_run_and_its_report_sound(chunks):
    """Chunks stamped anything (NaN, Inf, far past or future, going back) from a source, then
    a good one: the good one gets through a filter to the sink, nothing stops, and the report
    is strict JSON with finite figures."""
    import json

    from test_pipeline import FEED, INFO, SINK, build

    pipe = build([FEED, {"name": "bp", "node": "filter",
                         "params": {"kind": "bandpass", "freqs": [1, 40]}}, SINK])
    pipe.start()
    try:
        for k, offsets in enumerate(chunks):
            stamps = local_clock() + np.asarray(offsets, dtype=np.float64)
            pipe.nodes["src"].queue.put(Chunk(np.ones((len(offsets), 4), np.float32), stamps,
                                              INFO, k))
        last = local_clock() - np.arange(5)[::-1] / 250.0
        pipe.nodes["src"].queue.put(Chunk(np.ones((5, 4), np.float32), last, INFO, 99))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not any(
                c.seq == 99 for c in pipe.nodes["sink"].chunks):
            time.sleep(0.005)
    finally:
        pipe.stop()
    report = pipe.report()
    assert any(c.seq == 99 for c in pipe.nodes["sink"].chunks), "the good chunk was lost"
    assert pipe.fatal is None and not pipe.scheduler.died
    json.dumps(report, allow_nan=False)
    assert all(np.isfinite(v) for v in report["end_to_end"].values())


def test_a_source_loop_meets_a_defect_on_one_chunk_and_reads_on():
    """A chunk the scheduler itself cannot time (a custom source's info with no rate) is
    counted as an error of that source; the next chunk goes through, the loop lives."""
    from dataclasses import replace

    from test_pipeline import FEED, INFO, SINK, build, chunks_of

    pipe = build([FEED, SINK])
    good = chunks_of(np.ones((30, 4), np.float32), size=10)
    broken = replace(good[1], info=replace(INFO, rate=None))
    pipe.start()
    try:
        for c in (good[0], broken, good[2]):
            pipe.nodes["src"].queue.put(c)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and len(pipe.nodes["sink"].chunks) < 2:
            time.sleep(0.01)
    finally:
        pipe.stop()
    report = pipe.report()
    assert [c.seq for c in pipe.nodes["sink"].chunks] == [0, 2]
    assert report["quarantined"] == {"src": {"error:TypeError": 1}} and not pipe.scheduler.died


@pytest.mark.parametrize("member", ["model/data/sample_inputs/model.pt",
                                    "model/data/constants/opaque_obj_0"])
def test_a_crafted_torch_export_archive_runs_nothing(tmp_path, member):
    """torch.export.load falls back to full unpickling for sample inputs and unpickles opaque
    constants outright: a bundle's model.pt2 carrying such a pickle is refused unread."""
    import io
    import zipfile
    from pathlib import Path

    from edgert.export.bundle import BundleError
    from edgert.export.torch_file import load
    from edgert.methods.ship import shipped_folder

    marker = tmp_path / "ran"
    crafted = tmp_path / "model.pt2"
    evil = io.BytesIO()
    torch.save({"x": Ran(str(marker))}, evil)
    with zipfile.ZipFile(shipped_folder("btta_dg") / "bundle" / "model.pt2") as src, \
            zipfile.ZipFile(crafted, "w") as out:
        for item in src.infolist():
            if item.filename != member:
                out.writestr(item, src.read(item.filename))
        out.writestr(member, evil.getvalue() if member.endswith(".pt") else
                     pickle.dumps(Ran(str(marker))))
    with pytest.raises(BundleError, match=f"{member}.*refused"):
        load(Path(crafted))
    assert not marker.exists(), "code in the archive ran"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_an_lsl_outlet_stamping_samples_nan_or_inf_loses_only_those_samples(uid, bad):
    """liblsl passes any double as a timestamp: a real outlet stamps one sample in five NaN or
    Inf; the four others of each chunk reach the sink, the bad ones are counted."""
    import pylsl

    from edgert.runtime import spec as specs

    name = f"stamps-{uid}"
    outlet = pylsl.StreamOutlet(pylsl.StreamInfo(name, "EEG", 2, 100, "float32", name))
    raw = {"name": "n", "nodes": [
        {"name": "src", "node": "lsl_inlet", "params": {"name": name, "wait": 10}},
        {"name": "sink", "node": "pipeline_nodes:Collect"}]}
    pipe = Pipeline(specs.parse(raw, "stamps"))
    pipe.start()
    try:
        time.sleep(0.5)
        for k in range(20):
            stamps = local_clock() - np.arange(5)[::-1] / 100
            stamps[2] = bad
            outlet.push_chunk(np.full((5, 2), k, np.float32), stamps.tolist())
            time.sleep(0.02)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and \
                sum(len(c) for c in pipe.nodes["sink"].chunks) < 80:
            time.sleep(0.05)
    finally:
        pipe.stop()
        del outlet
    report = pipe.report()
    got = pipe.nodes["sink"].chunks
    assert sum(len(c) for c in got) == 80 and all(np.isfinite(c.timestamps).all() for c in got)
    assert report["quarantined"] == {"src": {"timestamps": 20}} and pipe.fatal is None


def test_a_flood_of_unanswered_requests_keeps_the_router_table_bounded(monkeypatch):
    """Requests nobody answers are forgotten oldest first beyond MAX_PENDING (and after
    `forget` s), each counted as expired."""
    from edgert.streams import zmq_link

    monkeypatch.setattr(zmq_link, "MAX_PENDING", 50)
    endpoint = free_endpoint()
    with zmq_link.Server(endpoint) as server:
        client = zmq.Context.instance().socket(zmq.DEALER)
        client.connect(endpoint)
        try:
            for k in range(200):
                client.send_multipart([b"", *good(k)])
            got = 0
            while got < 200 and server.receive(timeout=5) is not None:
                got += 1
        finally:
            client.close(linger=0)
        assert got == 200 and len(server.pending) <= 50 and server.expired >= 150


@pytest.mark.parametrize("attack", ["stream.dtype not a dtype", "error reply on a receiving "
                                    "socket", "NaN t0", "shape [0, 2**63]"])
def test_a_bad_request_gets_an_error_reply_and_the_service_answers_the_next(tmp_path, attack):
    """A ROUTER service (`zmq_in` router -> `zmq_out` reply, an echo): a DEALER sends a bad
    request among good ones; it is answered with an error naming the field, every good one
    with its chunk."""
    endpoint = free_endpoint()
    spec = tmp_path / "echo.yaml"
    spec.write_text(f"""name: echo
nodes:
  - {{name: requests, node: zmq_in, params: {{endpoint: "{endpoint}", pattern: router}}}}
  - {{name: reply, node: zmq_out, params: {{endpoint: "{endpoint}", pattern: reply}}}}
""")
    pipe = Pipeline.from_yaml(spec)
    pipe.start()
    client = zmq.Context.instance().socket(zmq.DEALER)
    client.connect(endpoint)
    try:
        client.send_multipart([b"", *ONE_FRAME_ATTACKS[attack](good(99))])
        for k in range(20):
            client.send_multipart([b"", *good(k)])
        replies = []
        while len(replies) < 21 and client.poll(5000):
            replies.append(client.recv_multipart()[1:])
    finally:
        client.close(linger=0)
        pipe.stop()
    errors = [msgpack.unpackb(r[0])["error"] for r in replies if "error" in msgpack.unpackb(r[0])]
    answered = sorted(wire.decode(r).seq for r in replies if "error" not in msgpack.unpackb(r[0]))
    assert len(errors) == 1 and "field" in errors[0], errors
    assert answered == list(range(20))
    assert pipe.report()["quarantined"] == {"requests": {"wire": 1}}
