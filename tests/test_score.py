"""Online accuracy where the cues carry the class: the epoch node hands each trial's cue to
the score node, stamped like the decision made from that trial, and the score node pairs
them; a bundle trained on a user's recordings carries the pipeline settings it needs."""
import json

import numpy as np
import pytest

from edgert.runtime import spec as specs
from edgert.runtime.nodes.epoch import Epoch
from edgert.runtime.nodes.score import Score, cue_class, cue_pattern
from edgert.cli.console import report_table
from edgert.streams import Chunk, StreamInfo

SIGNAL = StreamInfo(name="eeg", type="EEG", channels=("a",), rate=100.0)
MARKS = StreamInfo(name="cues", type="Markers", channels=("m",), rate=0.0, dtype="string")
PROBS = StreamInfo(name="probs", type="Probabilities", channels=("left", "right"), rate=0.0)
SWITCH = {"left": r"re:switch,\d+,0,.*", "right": r"re:switch,\d+,1,.*"}


def _epochs(markers: list[tuple[float, str]]) -> tuple[list[Chunk], list[Chunk]]:
    node = Epoch("epoch", Epoch.Params(offset=0.0, length=0.5, pattern=cue_pattern(SWITCH)))
    node.start()
    epochs, cues = [], []
    for t, text in markers:
        node.process({"markers": Chunk(np.array([[text]], dtype=object), np.array([t]), MARKS)})
    i = np.arange(0, 1000)
    out = node.process({"signal": Chunk(i[:, None].astype(np.float32), i / 100.0, SIGNAL)})
    return out["out"], out["cues"]


def test_each_epoch_comes_with_its_cue_stamped_like_its_last_sample():
    epochs, cues = _epochs([(1.0, "switch,3,0,2"), (2.0, "Trial Ends"), (3.0, "switch,3,1,2")])
    assert [c.data[0, 0] for c in cues] == ["switch,3,0,2", "switch,3,1,2"]
    assert [c.timestamps[0] for c in cues] == [e.timestamps[-1] for e in epochs]


def _score(params: dict, decisions: list[tuple[Chunk, Chunk]]) -> Score:
    node = Score("score", Score.Params(**params))
    node.start()
    for cue, probs in decisions:  # the two halves of a trial arrive in either order
        node.process({"probs": probs})
        node.process({"cues": cue})
    return node


def test_score_pairs_each_decision_with_its_cue_and_counts_hits():
    epochs, cues = _epochs([(1.0, "switch,3,0,2"), (3.0, "switch,3,1,2"),
                            (5.0, "switch,3,1,2")])
    rows = [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]]  # right, right, wrong
    decisions = [(c, Chunk(np.array([r], np.float32), e.timestamps[-1:], PROBS))
                 for c, e, r in zip(cues, epochs, rows)]
    node = _score({"classes": SWITCH}, decisions)
    stats = node.stats()
    assert (stats["scored"], stats["correct"]) == (3, 2)
    assert stats["online_accuracy"] == pytest.approx(2 / 3)
    assert [d["true"] for d in stats["decisions"]] == ["left", "right", "right"]
    assert [d["predicted"] for d in stats["decisions"]] == ["left", "right", "left"]
    assert stats["decisions"][-1]["running_accuracy"] == pytest.approx(0.6667, abs=1e-4)
    report = {"pipeline": "bci", "nodes": {"score": {
        **stats, **{k: 0.1 for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")},
        "processed": 6, "dropped": 0, "quarantined": 0}},
        "end_to_end": {"p50_ms": 1, "p90_ms": 1, "p99_ms": 1, "max_ms": 1, "count": 3},
        "dropped": 0}
    assert "online accuracy 2/3 (67%)" in report_table(report).caption


def test_a_marker_naming_no_class_is_counted_unlabelled_not_scored():
    epochs, cues = _epochs([(1.0, "switch,3,0,2")])
    probs = Chunk(np.array([[0.4, 0.6]], np.float32), epochs[0].timestamps[-1:], PROBS)
    node = _score({"classes": {"left": "cue-left", "right": "cue-right"}}, [(cues[0], probs)])
    assert node.stats()["unlabelled"] == 1 and node.stats()["online_accuracy"] is None


def test_without_a_mapping_the_marker_is_the_class_name():
    epochs, cues = _epochs([(1.0, "switch,3,0,2")])
    stamp = epochs[0].timestamps[-1:]
    probs = Chunk(np.array([[0.3, 0.7]], np.float32), stamp, PROBS)
    node = _score({}, [(Chunk(np.array([["right"]], dtype=object), stamp, MARKS), probs)])
    assert node.stats()["decisions"][0]["true"] == "right" and node.stats()["correct"] == 1


def test_cue_patterns_match_whole_markers_only():
    which = cue_class(SWITCH)
    assert [which(m) for m in ("switch,3,0,2", "switch,3,1,2", "xswitch,3,0,2")] == [0, 1, None]


PIPELINE = {"name": "bci", "nodes": [
    {"name": "eeg", "node": "lsl_inlet", "params": {"type": "EEG"}},
    {"name": "markers", "node": "lsl_inlet", "params": {"type": "Markers"}},
    {"name": "decoder", "node": "infer", "params": {"bundle": "x"}},
    {"name": "adapt", "node": "infer", "params": {"bundle": "x"}}]}


def _bundle(folder, sets: dict):
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"preprocessing": {"pipeline": {
        "bci": sets}}}))
    return folder


def test_a_bundle_named_on_the_command_line_sets_what_the_user_did_not(tmp_path):
    bundle = _bundle(tmp_path / "b", {"decoder.bundle": "{bundle}",
                                      "markers.name": "UnityMarkerStream",
                                      "markers.type": "LSL_Marker_Strings",
                                      "eeg.channels": ["C3", "C4"], "absent.field": 1})
    given = [f"adapt.bundle={bundle}", "markers.type=Markers"]
    sets = specs.carried(PIPELINE, given)
    assert f'decoder.bundle="{bundle}"' in sets and 'eeg.channels=["C3", "C4"]' in sets
    assert 'markers.name="UnityMarkerStream"' in sets
    assert not any(s.startswith(("markers.type", "absent.")) for s in sets)
    spec = specs.parse(json.loads(json.dumps(PIPELINE)), "bci.yaml", given)
    params = {n.name: n.params for n in spec.nodes}
    assert params["decoder"]["bundle"] == str(bundle)
    assert params["markers"] == {"type": "Markers", "name": "UnityMarkerStream"}
    assert params["eeg"]["channels"] == ["C3", "C4"]


def test_a_bundle_without_pipeline_settings_sets_nothing(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"preprocessing": {}}))
    assert specs.carried(PIPELINE, [f"adapt.bundle={tmp_path}"]) == []
    assert specs.carried(PIPELINE, ["adapt.bundle=/no/such/folder"]) == []
