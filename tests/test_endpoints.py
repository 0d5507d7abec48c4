"""ZeroMQ and video nodes in real pipelines, with clients in other processes."""
import subprocess
import sys
import threading
import time

import cv2
import numpy as np

from edgert.runtime import spec
from edgert.runtime.pipeline import Pipeline
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.zmq_link import Requester, Subscriber

INFO = StreamInfo.make("ecg", 2, type="ECG", rate=100.0)

PUSHER = """
import sys, numpy as np
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.zmq_link import Pusher
info = StreamInfo.make("ecg", 2, type="ECG", rate=100.0)
with Pusher(sys.argv[1]) as push:
    for i in range(50):
        t = local_clock()
        push.push(Chunk(np.full((4, 2), i, np.float32), t + np.arange(4) / 100, info, seq=i))
    push.close(linger=2.0)
"""


def build(raw):
    return Pipeline(spec.parse(raw, "zmq.yaml"), "zmq.yaml")


def test_pull_to_pub_between_processes_keeps_every_chunk():
    pipe = build({"name": "z", "nodes": [
        {"name": "in", "node": "zmq_in", "params": {"endpoint": "tcp://127.0.0.1:*",
                                                    "pattern": "pull"}},
        {"name": "lp", "node": "filter", "params": {"kind": "lowpass", "freqs": 40}},
        {"name": "out", "node": "zmq_out", "params": {"endpoint": "tcp://127.0.0.1:*"}}]})
    pipe.start()
    try:
        sub = Subscriber(pipe.nodes["out"].link.endpoint)
        time.sleep(0.3)
        sender = subprocess.run([sys.executable, "-c", PUSHER, pipe.nodes["in"].link.endpoint],
                                timeout=60, capture_output=True, text=True)
        assert sender.returncode == 0, sender.stderr
        got = []
        while (chunk := sub.pull(2.0)) is not None and len(got) < 50:
            got.append(chunk)
        sub.close()
    finally:
        pipe.stop()
    assert [c.seq for c in got] == list(range(50))
    assert all(c.info.name == "ecg" and c.data.shape == (4, 2) for c in got)
    assert [s for s, *_ in got[-1].trace][-3:] == ["zmq_pull", "lp", "zmq_sub"]
    report = pipe.report()
    assert report["nodes"]["out"]["processed"] == 50 and report["dropped"] == 0


def test_rep_source_acknowledges_each_chunk_with_its_seq():
    pipe = build({"name": "r", "nodes": [
        {"name": "in", "node": "zmq_in", "params": {"endpoint": "tcp://127.0.0.1:*",
                                                    "pattern": "rep"}},
        {"name": "sink", "node": "pipeline_nodes:Collect"}]})
    pipe.start()
    try:
        with Requester(pipe.nodes["in"].link.endpoint) as req:
            acks = [req.request(Chunk(np.zeros((3, 2), np.float32),
                                      local_clock() + np.arange(3) / 100, INFO, seq=i), 5.0)
                    for i in range(5)]
        time.sleep(0.2)
    finally:
        pipe.stop()
    assert [a.seq for a in acks] == list(range(5)) and all(len(a) == 0 for a in acks)
    assert [c.seq for c in pipe.nodes["sink"].chunks] == list(range(5))


def test_router_service_answers_each_client_with_its_own_reply():
    endpoint = "tcp://127.0.0.1:*"
    pipe = build({"name": "svc", "nodes": [
        {"name": "in", "node": "zmq_in", "params": {"endpoint": endpoint, "pattern": "router"}},
        {"name": "work", "node": "pipeline_nodes:Slow", "params": {"seconds": 0.002}},
        {"name": "out", "node": "zmq_out", "params": {"endpoint": endpoint,
                                                      "pattern": "reply"}}],
        "edges": [{"from": "in", "to": "work"}, {"from": "work", "to": "out"}]})
    pipe.start()
    replies: dict[int, list[Chunk]] = {}

    def client(k: int) -> None:
        with Requester(pipe.nodes["in"].link.endpoint) as req:
            replies[k] = [req.request(Chunk(np.full((1, 2), 100 * k + i, np.float32),
                                            np.array([local_clock()]), INFO, seq=i), 5.0)
                          for i in range(10)]

    try:
        threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        stats = pipe.nodes["in"].stats()
    finally:
        pipe.stop()
    for k in range(3):
        assert [r.seq for r in replies[k]] == list(range(10))
        assert [float(r.data[0, 0]) for r in replies[k]] == [100.0 * k + i for i in range(10)]
    assert stats["requests"] == stats["answered"] == 30


def test_video_file_through_a_pipeline(tmp_path):
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25.0, (16, 12))
    for i in range(8):
        writer.write(np.full((12, 16, 3), 30 * i, np.uint8))
    writer.release()
    pipe = build({"name": "v", "nodes": [
        {"name": "cam", "node": "video", "params": {"source": str(path), "realtime": False}},
        {"name": "sink", "node": "pipeline_nodes:Collect"}]})
    pipe.start()
    time.sleep(1.0)
    pipe.stop()
    frames = pipe.nodes["sink"].chunks
    assert len(frames) == 8
    assert frames[0].data.shape == (1, 12, 16, 3) and frames[0].data.dtype == np.uint8
    assert np.all(np.diff([f.timestamps[0] for f in frames]) > 0)
