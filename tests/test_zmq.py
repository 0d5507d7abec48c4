"""ZeroMQ links on 127.0.0.1 between real processes, the wire format, and a client from the docs."""
import multiprocessing
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from edgert.streams import wire
from edgert.streams.chunk import Chunk, StreamInfo
from edgert.streams.wire import RemoteError, WireError
from edgert.streams.zmq_link import Publisher, Puller, Pusher, Replier, Requester, Subscriber

ANY_PORT = "tcp://127.0.0.1:*"
SPAWN = multiprocessing.get_context("spawn")


def sample_chunks(prefix: str = "eeg") -> list[Chunk]:
    """float32 with regular times (t0 + rate form), int16, float64 and strings (list form)."""
    rng = np.random.default_rng(0)
    t = 1000.0
    return [
        Chunk(rng.standard_normal((6, 4)).astype(np.float32), t + np.arange(6) / 250,
              StreamInfo.make(f"{prefix}_f32", 4, type="EEG", units=("uV",) * 4, rate=250.0,
                              source_id="amp-1"), seq=7, trace=[("source", t, t + 0.001)]),
        Chunk(rng.integers(-30000, 30000, (5, 2)).astype(np.int16),
              t + np.array([0.0, 0.01, 0.013, 0.05, 0.06]),
              StreamInfo.make(f"{prefix}_i16", 2, rate=100.0, dtype="int16"), seq=8, gap=True),
        Chunk(rng.standard_normal((3, 8)), t + np.array([0.1, 0.2, 0.35]),
              StreamInfo.make(f"{prefix}_f64", 8, dtype="float64"), seq=9),
        Chunk(np.array([["left"], ["right ✓"]], dtype=object), np.array([t + 1.5, t + 2.25]),
              StreamInfo.make(f"{prefix}_markers", 1, type="Markers", dtype="string"), seq=10),
    ]


def sync_chunk(name: str) -> Chunk:
    return Chunk(np.zeros((1, 1), np.float32), np.array([0.0]), StreamInfo.make(name, 1))


def assert_same(got: Chunk, sent: Chunk, stage: str) -> None:
    assert got.info == sent.info
    assert got.data.dtype == sent.data.dtype and got.data.shape == sent.data.shape
    assert got.data.tolist() == sent.data.tolist()
    np.testing.assert_allclose(got.timestamps, sent.timestamps, rtol=0, atol=1e-9)
    assert (got.seq, got.gap) == (sent.seq, sent.gap)
    assert got.trace[:len(sent.trace)] == sent.trace and got.trace[-1][0] == stage


def double(chunk: Chunk) -> Chunk:
    """The replier's handler: numbers doubled, strings upper-cased, 'bad' streams refused."""
    if chunk.info.name == "bad":
        raise ValueError("refusing stream 'bad'")
    data = np.char.upper(chunk.data.astype(str)).astype(object) if chunk.is_string \
        else chunk.data * 2
    info = StreamInfo(**{**chunk.info.__dict__, "name": chunk.info.name + "_reply"})
    return chunk.derive(data, info=info)


def run_pusher(endpoint: str, chunks: list[Chunk]) -> None:
    pusher = Pusher(endpoint)
    for chunk in chunks:
        pusher.push(chunk, timeout=10)
    pusher.close(linger=10)


def run_publisher(endpoint: str, chunks: list[Chunk], ready) -> None:
    """Publish sync chunks until the subscriber has one (slow joiner), then the real ones."""
    publisher = Publisher(endpoint, bind=False)
    deadline = time.monotonic() + 20
    while not ready.wait(0.01) and time.monotonic() < deadline:
        publisher.push(sync_chunk("eeg.sync"))
    publisher.push(sample_chunks("other")[0])
    for chunk in chunks:
        publisher.push(chunk)
    publisher.close(linger=10)


def run_replier(endpoints, n_requests: int) -> None:
    with Replier(ANY_PORT) as replier:
        endpoints.put(replier.endpoint)
        served = 0
        while served < n_requests:
            try:
                served += replier.serve_once(double, timeout=10)
            except ValueError:
                served += 1


def start(target, *args) -> multiprocessing.Process:
    process = SPAWN.Process(target=target, args=args, daemon=True)
    process.start()
    return process


def finish(process: multiprocessing.Process) -> None:
    process.join(10)
    assert process.exitcode == 0


def test_push_pull_between_processes():
    chunks = sample_chunks()
    with Puller(ANY_PORT) as puller:
        process = start(run_pusher, puller.endpoint, chunks)
        got = [puller.pull(timeout=20) for _ in chunks]
        finish(process)
        assert puller.pull(timeout=0.05) is None
    for received, sent in zip(got, chunks):
        assert_same(received, sent, "zmq_pull")


def test_pub_sub_between_processes_filters_by_topic():
    chunks = sample_chunks()
    ready = SPAWN.Event()
    with Subscriber(ANY_PORT, topic="eeg", bind=True) as subscriber:
        process = start(run_publisher, subscriber.endpoint, chunks, ready)
        assert subscriber.pull(timeout=20).info.name == "eeg.sync"
        ready.set()
        got = []
        while len(got) < len(chunks):
            chunk = subscriber.pull(timeout=10)
            if chunk.info.name != "eeg.sync":
                got.append(chunk)
        finish(process)
    assert [c.info.name for c in got] == [c.info.name for c in chunks]
    for received, sent in zip(got, chunks):
        assert_same(received, sent, "zmq_sub")
    assert subscriber.missed == 0


def test_req_rep_between_processes_with_error_reply():
    chunks = sample_chunks()
    endpoints = SPAWN.Queue()
    process = start(run_replier, endpoints, len(chunks) + 2)
    with Requester(endpoints.get(timeout=20)) as requester:
        for chunk in chunks:
            reply = requester.request(chunk, timeout=20)
            assert_same(reply, double(chunk), "zmq_req")
            assert [s for s, _, _ in reply.trace][-2:] == ["zmq_rep", "zmq_req"]
        with pytest.raises(RemoteError, match="ValueError: refusing stream 'bad'"):
            requester.request(sync_chunk("bad"), timeout=10)
        assert requester.request(chunks[0], timeout=10).data[0, 0] == chunks[0].data[0, 0] * 2
    finish(process)


def test_timestamps_take_both_forms_and_list_form_is_exact():
    chunks = sample_chunks()
    headers = [wire.decode_header(wire.encode(c)[0]) for c in chunks]
    assert ["t0" in h for h in headers] == [True, False, False, False]
    assert headers[0]["rate"] == 250.0 and "timestamps" not in headers[0]
    for chunk in chunks[1:]:
        assert np.array_equal(wire.decode(wire.encode(chunk)).timestamps, chunk.timestamps)


def test_irregular_times_on_a_regular_stream_use_the_list():
    chunk = sample_chunks()[0]
    chunk.timestamps = chunk.timestamps + np.array([0, 0, 2e-9, 0, 0, 0])
    header = wire.decode_header(wire.encode(chunk)[0])
    assert header["timestamps"] == chunk.timestamps.tolist()


# A client written from docs/wire.md alone: no edgert imports below.

DOC_DTYPES = {"bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2",
              "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
              "float16": "<f2", "float32": "<f4", "float64": "<f8"}


def doc_encode(name: str, data, dtype: str, rate: float = 0.0, timestamps=None, t0=None,
               seq: int = 0) -> list[bytes]:
    header = {"v": 1, "stream": {"name": name, "type": "Test", "channels": ["a", "b"],
                                 "units": ["V", "V"], "rate": rate, "dtype": dtype,
                                 "source_id": "doc-client"},
              "seq": seq, "gap": False, "dtype": dtype, "shape": list(np.shape(data))}
    if t0 is None:
        header["timestamps"] = list(timestamps)
    else:
        header.update(t0=t0, rate=rate)
    payload = msgpack.packb(data) if dtype == "string" else \
        np.asarray(data, DOC_DTYPES[dtype]).tobytes(order="C")
    return [msgpack.packb(header), payload]


def doc_decode(frames: list[bytes]) -> tuple[dict, np.ndarray, np.ndarray]:
    topic, raw_header, payload = frames
    header = msgpack.unpackb(raw_header)
    assert header["v"] == 1 and topic.decode() == header["stream"]["name"]
    shape = header["shape"]
    if header["dtype"] == "string":
        data = np.array(msgpack.unpackb(payload), dtype=object).reshape(shape)
    else:
        data = np.frombuffer(payload, DOC_DTYPES[header["dtype"]]).reshape(shape)
    if "timestamps" in header:
        stamps = np.array(header["timestamps"])
    else:
        stamps = header["t0"] + np.arange(shape[0]) / header["rate"]
    return header, data, stamps


def test_client_from_the_docs_pushes_to_a_puller():
    values = [[1.5, -2.0], [3.25, 4.0], [5.0, 6.5]]
    with Puller(ANY_PORT) as puller:
        sock = zmq.Context.instance().socket(zmq.PUSH)
        sock.connect(puller.endpoint)
        sock.send_multipart(doc_encode("doc_f32", values, "float32", rate=100.0, t0=50.0,
                                       seq=3))
        sock.send_multipart(doc_encode("doc_i16", [[1, -2]], "int16", timestamps=[51.5]))
        sock.send_multipart(doc_encode("doc_str", [["x", "y"], ["z", "w"]], "string",
                                       timestamps=[52.0, 52.5]))
        got = [puller.pull(timeout=10) for _ in range(3)]
        sock.close(linger=0)
    assert got[0].data.dtype == np.float32 and got[0].data.tolist() == values
    assert got[0].timestamps.tolist() == [50.0, 50.01, 50.02] and got[0].seq == 3
    assert got[0].info == StreamInfo("doc_f32", "Test", ("a", "b"), ("V", "V"), 100.0,
                                     "float32", "doc-client")
    assert got[1].data.dtype == np.int16 and got[1].data.tolist() == [[1, -2]]
    assert got[2].data.tolist() == [["x", "y"], ["z", "w"]]
    assert got[2].timestamps.tolist() == [52.0, 52.5]


def test_client_from_the_docs_subscribes_to_a_publisher():
    chunks = sample_chunks()
    with Publisher(ANY_PORT) as publisher:
        sock = zmq.Context.instance().socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(publisher.endpoint)
        while not sock.poll(10):
            publisher.push(sync_chunk("sync"))
        for chunk in chunks:
            publisher.push(chunk)
        received = []
        while len(received) < len(chunks):
            assert sock.poll(10_000)
            frames = sock.recv_multipart()
            if frames[0] != b"sync":
                received.append(doc_decode(frames))
        sock.close(linger=0)
    for (header, data, stamps), chunk in zip(received, chunks):
        assert header["stream"]["name"] == chunk.info.name
        assert header["stream"]["channels"] == list(chunk.info.channels)
        assert (header["seq"], header["gap"]) == (chunk.seq, chunk.gap)
        assert data.tolist() == chunk.data.tolist()
        np.testing.assert_allclose(stamps, chunk.timestamps, rtol=0, atol=1e-9)


def good_message() -> tuple[dict, bytes]:
    header, payload = doc_encode("eeg", [[1.0, 2.0]] * 5, "float32",
                                 timestamps=[0.1, 0.2, 0.3, 0.4, 0.5])
    return msgpack.unpackb(header), payload


def broken(field: str) -> list:
    header, payload = good_message()
    if field == "v":
        header["v"] = 2
    elif field in ("seq", "shape"):
        del header[field]
    elif field == "stream.channels":
        del header["stream"]["channels"]
    elif field == "dtype":
        header["dtype"] = "float128"
    elif field == "payload":
        payload = payload[:-4]
    elif field == "timestamps":
        header["timestamps"] = header["timestamps"][:-1]
    elif field == "rate":
        del header["timestamps"]
        header.update(t0=1.0, rate=0.0)
    elif field == "header":
        return [b"\xc1", payload]
    elif field == "frames":
        return [msgpack.packb(header), payload, b""]
    return [msgpack.packb(header), payload]


@pytest.mark.parametrize("field", ["v", "seq", "shape", "stream.channels", "dtype", "payload",
                                   "timestamps", "rate", "header", "frames"])
def test_malformed_message_names_the_field(field):
    with pytest.raises(WireError) as error:
        wire.decode(broken(field))
    assert error.value.field == field and repr(field) in str(error.value)
    if field not in ("v", "header", "frames"):
        assert error.value.stream == "eeg" and "stream 'eeg'" in str(error.value)


def test_puller_raises_on_malformed_message_and_goes_on():
    with Puller(ANY_PORT) as puller, Pusher(puller.endpoint) as pusher:
        pusher.socket.send_multipart(broken("payload"))
        pusher.push(sample_chunks()[0])
        with pytest.raises(WireError, match="'payload'"):
            puller.pull(timeout=10)
        assert puller.pull(timeout=10).info.name == "eeg_f32"


def test_pull_timeout_returns_none_without_spinning():
    with Puller(ANY_PORT) as puller:
        wall, cpu = time.monotonic(), time.process_time()
        assert puller.pull(timeout=0.3) is None
        wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    assert 0.25 <= wall < 1.0
    assert cpu < 0.1


def test_push_without_puller_times_out():
    with Pusher(ANY_PORT, bind=True) as pusher:
        with pytest.raises(TimeoutError, match="eeg_f32"):
            pusher.push(sample_chunks()[0], timeout=0.1)


def test_request_after_timeout_gets_its_own_reply():
    first, second = sample_chunks()[:2]
    with Replier(ANY_PORT) as replier, Requester(replier.endpoint) as requester:
        with pytest.raises(TimeoutError):
            requester.request(first, timeout=0.2)
        stop = threading.Event()

        def echo_until_stopped():
            while not stop.is_set():
                replier.serve_once(lambda chunk: chunk, timeout=0.05)

        server = threading.Thread(target=echo_until_stopped)
        server.start()
        reply = requester.request(second, timeout=10)
        stop.set()
        server.join(10)
    assert reply.info.name == second.info.name and reply.seq == second.seq


def test_subscriber_counts_missed_chunks():
    chunk = sample_chunks()[0]
    with Publisher(ANY_PORT) as publisher, \
            Subscriber(publisher.endpoint, topic="eeg_f32") as subscriber:
        while subscriber.pull(timeout=0.01) is None:
            publisher.push(chunk)
        for seq in (1, 2, 4, 7):
            chunk.seq = seq
            publisher.push(chunk)
        seqs = []
        while not seqs or seqs[-1] != 7:
            seqs.append(subscriber.pull(timeout=10).seq)
    assert seqs[-4:] == [1, 2, 4, 7]
    assert subscriber.missed == 3


def test_encode_sends_the_arrays_own_memory():
    chunk = sample_chunks()[0]
    header, payload = wire.encode(chunk)
    assert isinstance(payload, memoryview) and payload.nbytes == chunk.data.nbytes
    assert np.shares_memory(np.frombuffer(payload, np.uint8), chunk.data)
    chunk.data[0, 0] = 123.0
    assert np.frombuffer(payload, "<f4")[0] == 123.0


def test_decode_wraps_the_received_buffer():
    chunk = sample_chunks()[0]
    header, payload = wire.encode(chunk)
    frame = bytearray(payload)
    decoded = wire.decode([header, frame])
    assert not decoded.data.flags.owndata
    frame[:4] = np.float32(-7.0).tobytes()
    assert decoded.data[0, 0] == -7.0


def test_pulled_array_is_a_view_of_the_zmq_message():
    with Puller(ANY_PORT) as puller, Pusher(puller.endpoint) as pusher:
        pusher.push(sample_chunks()[2])
        data = puller.pull(timeout=10).data
    base = data
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, memoryview) and isinstance(base.obj, zmq.Frame)
    assert data.shape == (3, 8) and data.dtype == np.float64


@pytest.mark.parametrize("data", [np.empty((0, 3), np.float32), np.empty((0, 2), object),
                                  np.arange(72, dtype=np.uint8).reshape(1, 4, 6, 3),
                                  np.array([[True], [False]])])
def test_empty_image_and_bool_chunks_round_trip(data):
    chunk = Chunk(data, 5.0 + np.arange(len(data)) / 30, StreamInfo.make("x", 1, rate=30.0))
    decoded = wire.decode(wire.encode(chunk))
    assert decoded.data.shape == data.shape and decoded.data.tolist() == data.tolist()
    np.testing.assert_allclose(decoded.timestamps, chunk.timestamps, rtol=0, atol=1e-9)


@pytest.mark.parametrize("layout", ["fortran", "strided", "big-endian"])
def test_non_contiguous_and_big_endian_arrays_are_sent_as_values(layout):
    chunk = sample_chunks()[2]
    values = chunk.data.copy()
    chunk.data = {"fortran": np.asfortranarray(values), "strided": np.repeat(values, 2, 1)[:, ::2],
                  "big-endian": values.astype(">f8")}[layout]
    decoded = wire.decode(wire.encode(chunk))
    assert decoded.data.tolist() == values.tolist()
    assert decoded.data.dtype == np.dtype("<f8")


def test_encode_refuses_what_the_wire_cannot_carry():
    chunk = sample_chunks()[0]
    with pytest.raises(WireError, match="timestamps"):
        wire.encode(Chunk(chunk.data, chunk.timestamps[:-1], chunk.info))
    with pytest.raises(WireError, match="complex64"):
        wire.encode(Chunk(chunk.data.astype(np.complex64), chunk.timestamps, chunk.info))
