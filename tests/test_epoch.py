"""The Epoch node: cue-locked trials from a signal and a marker stream, whatever comes first."""
import numpy as np
import pytest

from edgert.runtime.node import Misconfigured
from edgert.runtime.nodes.epoch import Epoch
from edgert.streams import Chunk, StreamInfo

SIGNAL = StreamInfo(name="eeg", type="EEG", channels=("a", "b"), rate=100.0)
MARKS = StreamInfo(name="cues", type="Markers", channels=("m",), rate=0.0, dtype="string")


def _node(**params) -> Epoch:
    node = Epoch("epoch", Epoch.Params(**params))
    node.start()
    return node


def _signal(start: int, n: int) -> Chunk:
    i = np.arange(start, start + n)
    return Chunk(np.stack([i, -i], 1).astype(np.float32), i / 100.0, SIGNAL)


def _marker(t: float, text: str = "left") -> Chunk:
    return Chunk(np.array([[text]], dtype=object), np.array([t]), MARKS)


def _run(node, chunks):
    out = []
    for port, chunk in chunks:
        result = node.process({port: chunk})
        out += result["out"] if result else []
    return out


def test_marker_before_its_samples_waits_for_them():
    node = _node(offset=0.5, length=1.0)
    out = _run(node, [("markers", _marker(1.0)), ("signal", _signal(0, 120)),
                      ("signal", _signal(120, 140))])
    assert len(out) == 1
    assert out[0].data[:, 0].tolist() == list(range(150, 250))
    np.testing.assert_allclose(out[0].timestamps, np.arange(150, 250) / 100.0)
    assert out[0].info.name == "eeg-epoch"


def test_late_marker_finds_its_trial_in_history_and_too_late_is_missed():
    node = _node(offset=0.0, length=0.5, history=2.0)
    out = _run(node, [("signal", _signal(0, 400)), ("markers", _marker(3.0)),
                      ("markers", _marker(0.5))])
    assert [o.data[0, 0] for o in out] == [300]
    assert node.stats() == {"epochs": 1, "missed": 1, "ignored_markers": 0}


def test_pattern_keeps_only_cue_markers():
    node = _node(length=0.2, pattern="switch,.*")
    out = _run(node, [("markers", _marker(0.1, "Trial Started")),
                      ("markers", _marker(0.2, "switch,3,1,2")), ("signal", _signal(0, 100))])
    assert len(out) == 1 and out[0].data[0, 0] == 20
    assert node.stats()["ignored_markers"] == 1


def test_irregular_signal_is_refused_with_the_stream_name():
    node = _node(length=1.0)
    with pytest.raises(Misconfigured, match="'cues'.*irregular"):
        node.check("signal", MARKS)
    node.check("markers", MARKS)
