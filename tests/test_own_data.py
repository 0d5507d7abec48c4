"""A user's own recordings in: `edgert train/evaluate --data` on XDF, PhysioNet EDF+ and BCI IV
2a GDF files (BTTA-DG) and CL-Drive folders and ADABase files (CogMoE) written here, every
malformed file named in one line, and the bundle trained on them checked against the live
stream's channels and rate."""
import json
import subprocess
import time

import numpy as np
import pytest

from bci_session import run_session
from drive_files import write_adabase, write_cl_drive
from gdf_file import write_gdf
from mi_files import CUES, write_physionet, write_xdf
from edgert import pipelines
from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.demo import recordings
from edgert.runtime.pipeline import Pipeline
from edgert.streams.replay import Replay
from edgert.streams.zmq_link import free_endpoint

LABELS = "--labels=" + ",".join(f"{k}={v}" for k, v in CUES.items())
SUBSET = ("C3", "C1", "Cz", "C2", "C4", "CP1", "CPz", "CP2")


def edgert(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["edgert", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def subset_bundle(tmp_path_factory):
    """A bundle trained (quick) on two 8-channel XDF sessions of one user."""
    folder = tmp_path_factory.mktemp("own")
    files = [write_xdf(folder / f"s{k}.xdf", 301, k, 24, channels=SUBSET) for k in range(2)]
    result = edgert("train", "btta_dg", "--quick", "--data", *files, LABELS, "--out",
                    folder / "model")
    assert result.returncode == 0, result.stdout + result.stderr
    return folder / "model" / "bundle", result.stdout


def test_train_on_xdf_writes_a_bundle_of_the_recordings_channels(subset_bundle):
    bundle, stdout = subset_bundle
    manifest = json.loads((bundle / "manifest.json").read_text())
    pre = manifest["preprocessing"]
    assert pre["channels"] == list(SUBSET) and pre["rate_hz"] == synth.RATE
    assert manifest["inputs"][0]["shape"] == ["batch", 8, 750]
    assert manifest["labels"] == list(CUES)
    assert f"run it live: edgert run bci --set adapt.bundle={bundle}" in one_line(stdout)
    carried = manifest["preprocessing"]["pipeline"]["bci"]
    assert carried["eeg.channels"] == list(SUBSET) and carried["eeg.name"] == "amp"
    assert carried["markers.name"] == "amp-cues" and carried["score.classes"] == CUES
    assert edgert("verify", bundle).returncode == 0


def _decode(bundle, uid, extra=(), trials=2):
    """The shipped bci pipeline on the 22-channel demo user, with `bundle`; the probabilities
    a ZeroMQ subscriber received, and the pipeline. The demo user's cues are the class names,
    not the recording's markers the bundle carries: those settings are cleared."""
    streams, _ = recordings(f"own-{uid}", trials, 0)
    endpoint = free_endpoint()
    sets = [f"eeg.name=own-{uid}-eeg", f"markers.name=own-{uid}-markers",
            f"decoder.bundle={bundle}", f"adapt.bundle={bundle}",
            f"probs_lsl.name=own-{uid}-probs", f"prior_lsl.name=own-{uid}-prior",
            f"probs_zmq.endpoint={endpoint}", "epoch.pattern=null", "score.classes=null",
            *extra]
    pipe = Pipeline.from_yaml(pipelines.find("bci"), sets)
    received = run_session(pipe, streams, endpoint, trials, speed=2.0, timeout=30)
    return received, pipe


def test_a_stream_with_other_channels_stops_the_run_saying_which(subset_bundle, uid):
    bundle, _ = subset_bundle
    received, pipe = _decode(bundle, uid, ["eeg.channels=null"])
    fatal = pipe.scheduler.fatal or ""
    assert received == [] and "node 'decoder'" in fatal, fatal
    assert "trained on 8 channels" in fatal and "has 22" in fatal
    assert f"--set SOURCE.channels=[{','.join(SUBSET)}]" in fatal


def test_the_source_picks_the_bundles_channels_and_the_trials_decode(subset_bundle, uid):
    """The bundle's channels are picked from the 22 the stream has without being asked."""
    bundle, _ = subset_bundle
    received, pipe = _decode(bundle, uid)
    assert pipe.scheduler.fatal is None
    assert len(received) == 2 and np.allclose(np.concatenate(received).sum(1), 1, atol=1e-5)


def test_a_channel_the_stream_lacks_stops_the_start_naming_it(subset_bundle, uid):
    bundle, _ = subset_bundle
    with pytest.raises(Exception, match=r"node 'eeg' could not start.*no channel \['Oz'\]"):
        _decode(bundle, uid, ["eeg.channels=[C3,Oz]"])


def test_evaluate_leaves_one_subject_out_on_physionet_subjects(tmp_path):
    """Two PhysioNet subjects (S001, S002): trained on one, adapted online on the other, with
    the reference decoders and the per-stage diagnostics of the held-out subject."""
    files = [write_physionet(tmp_path / f"S00{k}R{r:02d}.edf", 310 + k, r, 16)
             for k in (1, 2) for r in (4, 8)]
    out = tmp_path / "ev" / "r.json"
    result = edgert("evaluate", "btta_dg", "--quick", "--data", tmp_path, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    saved = json.loads(out.read_text())
    assert saved["data"]["labels"] == ["left_fist", "right_fist"]
    assert saved["data"]["rate_hz"] == 160 and len(saved["data"]["channels"]) == 22
    assert saved["protocols"] == ["leave_one_subject_out"]
    assert saved["data"]["subjects"] == {"S001": [0, 1], "S002": [2, 3]}
    assert saved["data"]["held_out"] == ["S002"] and len(files) == 4
    for variant in ("btta_dg", "no_adaptation", "euclidean_alignment", "tent", "csp_lda",
                    "tangent_space"):
        assert 0 <= saved["results"][variant]["accuracy"] <= 1
    diagnosis = saved["diagnostics"]["S002"]
    assert sum(diagnosis["true_shares"]) == pytest.approx(1, abs=0.01)
    assert diagnosis["source_separation"] >= 0 and len(diagnosis["mixture_weights"]) == 2
    assert (tmp_path / "ev" / "r.accuracy.png").stat().st_size > 0
    assert "tangent_space" in result.stdout and str(out) in one_line(result.stdout)


def test_evaluate_leaves_one_run_out_on_one_subjects_runs(tmp_path):
    """Two PhysioNet-format runs of 20 trials: a decoder trained on 16 of them once put every
    held-out trial in one class (chance) while BN re-estimation scored them all; its
    batch-norm statistics now come from its final weights, and it trains enough steps."""
    files = [write_physionet(tmp_path / f"S001R{r:02d}.edf", 311, i, 20)
             for i, r in enumerate((4, 8))]
    out = tmp_path / "r.json"
    result = edgert("evaluate", "btta_dg", "--quick", "--data", *files, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    saved = json.loads(out.read_text())
    assert saved["protocols"] == ["leave_one_out"]
    assert saved["data"]["held_out"] == [str(files[1])] and saved["data"]["subjects"] is None
    results, chance = saved["results"], saved["data"]["chance_accuracy"]
    for variant in ("no_adaptation", "euclidean_alignment", "btta_dg"):
        assert results[variant]["accuracy"] >= max(0.8, results["bn_adapt"]["accuracy"] - 0.1)
    assert results["no_adaptation"]["accuracy"] > chance + 0.2
    assert max(saved["diagnostics"][str(files[1])]["prior_shares"]) < 0.9


def test_a_folder_of_subject_folders_is_left_out_subject_by_subject(tmp_path):
    from edgert.runtime.plugin import Data
    from edgert.methods.btta_dg.data import subjects

    for user in ("anna", "ben", "cleo"):
        (tmp_path / user).mkdir()
        for k in range(2):
            (tmp_path / user / f"run{k}.xdf").write_bytes(b"")
    assert subjects(Data((tmp_path,))) == {"anna": [0, 1], "ben": [2, 3], "cleo": [4, 5]}
    given = tuple(tmp_path / u for u in ("anna", "ben"))
    assert subjects(Data(given)) == {"anna": [0, 1], "ben": [2, 3]}
    assert list(subjects(Data((tmp_path / "anna",)))) == [str(tmp_path / "anna" / "run0.xdf"),
                                                           str(tmp_path / "anna" / "run1.xdf")]


@pytest.mark.parametrize("case", ["no labels", "unknown marker", "missing channels", "one file",
                                  "no such file", "suffix", "format", "no out"])
def test_a_recording_it_cannot_use_is_named_in_one_line(tmp_path, case):
    a = write_xdf(tmp_path / "a.xdf", 320, 0, 4)
    b = write_xdf(tmp_path / "b.xdf", 320, 1, 4, channels=SUBSET)
    command, expect = {
        "no labels": (["train", "--data", a, "--out", tmp_path / "m"],
                      [str(a), "--labels", "cue-left"]),
        "unknown marker": (["train", "--data", a, "--labels", "left=go-left", "--out",
                            tmp_path / "m"], [str(a), "go-left", "cue-right"]),
        "missing channels": (["train", "--data", a, b, LABELS, "--out", tmp_path / "m"],
                             [str(b), "lacks channels", "FC3"]),
        "one file": (["evaluate", "--data", a, LABELS], ["at least two recordings"]),
        "no such file": (["train", "--data", tmp_path / "gone.xdf", "--out", tmp_path / "m"],
                         ["gone.xdf", "no such file"]),
        "suffix": (["train", "--data", tmp_path / "notes", "--out", tmp_path / "m"],
                   ["notes.txt", "--format"]),
        "format": (["train", "--data", a, "--format", "csv", "--out", tmp_path / "m"],
                   ["--format 'csv'", "xdf, bci_iv_2a, physionet"]),
        "no out": (["train", "--data", a, LABELS], ["--out DIR"]),
    }[case]
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("not a recording")
    result = edgert(command[0], "btta_dg", *command[1:])
    err = one_line(result.stderr)
    assert result.returncode == 2, result.stdout + result.stderr
    assert all(e in err for e in expect), err
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("suffix", [".xdf", ".edf", ".gdf"])
def test_a_malformed_file_is_named_with_what_it_should_be(tmp_path, suffix):
    path = tmp_path / f"broken{suffix}"
    if suffix == ".xdf":
        good = write_xdf(tmp_path / "good.xdf", 330, 0, 2).read_bytes()
        path.write_bytes(good[:len(good) // 3])
    elif suffix == ".edf":
        path.write_bytes(b"0       not an edf header" + bytes(300))
    else:
        write_gdf(path, np.zeros((100, 3), np.float32), 250, ["C3", "Cz", "C4"], [(10, 769)])
        path.write_bytes(path.read_bytes()[:200])
    result = edgert("train", "btta_dg", "--data", path, LABELS, "--out", tmp_path / "m")
    err = one_line(result.stderr)
    assert result.returncode == 2 and str(path) in err, result.stdout + result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_labs_day_calibrate_train_run_live_read_the_report(tmp_path, uid):
    """Record a calibration run with `edgert record` from a live amplifier, add an earlier
    session's file, train on both, run the shipped bci pipeline live with that bundle on a new
    run, and read its report; then the same user's PhysioNet-format runs through evaluate."""
    name = f"lab-{uid}"
    streams, _ = recordings(name, 20, seed=3)
    calibration = tmp_path / "calibration.xdf"
    replay = Replay(streams, chunk_size=10, speed=4.0)
    replay.open()
    recorder = subprocess.Popen(["edgert", "record", str(calibration), "-s", f"{name}-eeg",
                                 "-s", f"{name}-markers", "--duration", "40"])
    time.sleep(3)
    replay.start()
    replay.wait(60)
    assert recorder.wait(60) == 0
    replay.stop()
    earlier = write_xdf(tmp_path / "earlier.xdf", 101, 0, 30,
                        cues={k: k for k in synth.LABELS})
    labels = "--labels=" + ",".join(f"{k}={k}" for k in synth.LABELS)
    trained = edgert("train", "btta_dg", "--data", calibration, earlier, labels, "--out",
                     tmp_path / "model")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    bundle = tmp_path / "model" / "bundle"

    live, _ = recordings(f"{name}-live", 12, seed=5)
    replay = Replay(live, chunk_size=10, speed=2.0)
    replay.open()
    report = tmp_path / "run" / "report.json"
    run = subprocess.Popen(["edgert", "run", "bci", "--quiet", "--duration", "45", "--report",
                            str(report), "--set", f"eeg.name={name}-live-eeg", "--set",
                            f"markers.name={name}-live-markers", "--set",
                            f"decoder.bundle={bundle}", "--set", f"adapt.bundle={bundle}",
                            "--set", f"probs_zmq.endpoint={free_endpoint()}"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    replay.start()
    out, err = run.communicate(timeout=120)
    replay.stop()
    assert run.returncode == 0, out + err
    nodes = json.loads(report.read_text())["nodes"]
    assert nodes["adapt"]["trials"] == 12 and nodes["decoder"]["quarantined"] == 0

    (tmp_path / "edf").mkdir()
    for k in range(3):
        write_physionet(tmp_path / "edf" / f"S001R{4 + 4 * k:02d}.edf", 101, k, 30)
    result = edgert("evaluate", "btta_dg", "--data", tmp_path / "edf", "--out",
                    tmp_path / "ev.json")
    assert result.returncode == 0, result.stdout + result.stderr
    saved = json.loads((tmp_path / "ev.json").read_text())
    assert len(saved["data"]["held_out"]) == 3
    assert saved["results"]["btta_dg"]["accuracy"] > 0.6, saved["results"]


def test_cogmoe_trains_and_evaluates_on_cl_drive_and_adabase_recordings(tmp_path):
    root = write_cl_drive(tmp_path / "CL-Drive", ["P01", "P02"], 60)
    adabase = write_adabase(tmp_path / "S01.h5", 60)
    trained = edgert("train", "cogmoe", "--quick", "--data", root, adabase, "--out",
                     tmp_path / "model")
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert "--set stage2.bundle=" in one_line(trained.stdout)
    assert edgert("verify", tmp_path / "model" / "bundle").returncode == 0
    out = tmp_path / "ev.json"
    result = edgert("evaluate", "cogmoe", "--quick", "--data", root, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    saved = json.loads(out.read_text())
    assert saved["data"]["participants"] == ["CL-Drive/P01", "CL-Drive/P02"]
    assert saved["data"]["held_out"] == ["CL-Drive/P02"] and saved["data"]["windows"] > 0
    for variant in ("cogmoe", "early_fusion", "cogbasic", "modmoe", "boosted_trees"):
        assert 0 <= saved["results"][variant]["severe"]["f1"] <= 1


@pytest.mark.parametrize("case", ["not cl-drive", "no level column", "one participant"])
def test_a_car_recording_it_cannot_use_is_named(tmp_path, case):
    if case == "not cl-drive":
        (tmp_path / "folder").mkdir()
        args, expect = ["train", "--data", tmp_path / "folder", "--out", tmp_path / "m"], [
            "folder", "Labels/<participant>.csv"]
    elif case == "no level column":
        import pandas as pd

        pd.DataFrame({"ECG": [1.0, 2.0], "STUDY": ["k-drive"] * 2}).to_hdf(
            tmp_path / "bad.h5", key="SIGNALS", format="table")
        args, expect = ["train", "--data", tmp_path / "bad.h5", "--out", tmp_path / "m"], [
            "bad.h5", "LEVEL"]
    else:
        root = write_cl_drive(tmp_path / "CL-Drive", ["P01"], 20)
        args, expect = ["evaluate", "--data", root], ["at least two participants"]
    result = edgert(args[0], "cogmoe", *args[1:])
    err = one_line(result.stderr)
    assert result.returncode == 2 and all(e in err for e in expect), result.stdout + err
    assert "Traceback" not in result.stderr
