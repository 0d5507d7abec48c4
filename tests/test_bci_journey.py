"""A real BCI session end to end on the shared bci-essentials recordings, as a user types it:
train on three recorded runs, replay the fourth live on LSL (its EEG, its cue stream and the
echo stream beside it), run the shipped bci pipeline with nothing but the bundle, and read
the online accuracy and each trial's decision in the report."""
import json
import subprocess
import time

import pytest

RUNS = [f"eeg_mi/bciess_AG_MISwitch_run-00{k}.xdf" for k in (1, 2, 3, 4)]


def edgert(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["edgert", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_record_train_run_live_and_read_the_online_accuracy(shared_data, tmp_path):
    train = edgert("train", "btta_dg", "--quick", "--data",
                   *(shared_data / r for r in RUNS[:3]), "--out", tmp_path / "model")
    assert train.returncode == 0, train.stderr
    log = " ".join((train.stdout + train.stderr).split())
    assert "read 180 trials in 3 file(s), 16 channels at 256 Hz" in log
    assert "cues from stream 'UnityMarkerStream'" in log
    bundle = tmp_path / "model" / "bundle"
    assert f"run it live: edgert run bci --set adapt.bundle={bundle}" in log
    replay = subprocess.Popen(["edgert", "replay", shared_data / RUNS[3], "--speed", "4"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        run = edgert("run", "bci", "--set", f"adapt.bundle={bundle}", "--duration", "40",
                     "--quiet", "--report", tmp_path / "today.json", timeout=120)
    finally:
        replay.terminate()
        replay.wait(10)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "ERR|" not in run.stderr  # liblsl's own lines stay quiet when the replay ends
    report = json.loads((tmp_path / "today.json").read_text())
    score, epoch = report["nodes"]["score"], report["nodes"]["epoch"]
    assert score["scored"] == epoch["epochs"] >= 40 and score["unlabelled"] == 0
    assert epoch["ignored_markers"] > 0  # 'Trial Started', 'Trial Ends' cut no epoch
    assert 0 <= score["online_accuracy"] <= 1
    decisions = score["decisions"]
    assert all(d["marker"].startswith("switch,3,") for d in decisions)
    assert {d["true"] for d in decisions} == {"class_0", "class_1", "class_2"}
    assert f"online accuracy {score['correct']}/{score['scored']}" in " ".join(
        run.stdout.split())
