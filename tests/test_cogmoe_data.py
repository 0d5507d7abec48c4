"""CogMoE's CL-Drive loader on a small dataset written here in CL-Drive's own layout."""
import numpy as np
import pandas as pd
import pytest

from methods.cogmoe.data import read_cl_drive


def _write(root, participant="P01"):
    rng = np.random.default_rng(0)
    for folder, sensor, cols, rate in (("EEG", "eeg", ["TP9", "AF7", "AF8", "TP10"], 256),
                                       ("ECG", "ecg", ["ECG LL-RA"], 512),
                                       ("Gaze", "gaze", ["pupil_left", "gaze_x"], 50)):
        for level in (1, 2):
            n = rate * 20
            frame = pd.DataFrame(rng.normal(size=(n, len(cols))), columns=cols)
            if sensor == "ecg":
                frame.insert(0, "Timestamp", 1.7e12 + np.arange(n) * 1000.0 / rate)
            path = root / folder / participant
            path.mkdir(parents=True, exist_ok=True)
            frame.to_csv(path / f"{sensor}_data_level_{level}.csv", index=False)
    (root / "Labels").mkdir()
    pd.DataFrame({"level_1": [2, 3], "level_2": [7, 8]}).to_csv(
        root / "Labels" / f"{participant}.csv", index=False)


def test_cl_drive_levels_sensors_times_and_ratings(tmp_path):
    _write(tmp_path)
    levels = read_cl_drive(tmp_path, "P01", range(1, 3))
    assert [r.level for r in levels] == [1, 2]
    first = levels[0]
    assert set(first.signals) == {"eeg", "ecg", "gaze"}, "EDA absent: left out, not invented"
    t, eeg = first.signals["eeg"]
    assert eeg.shape == (5120, 4) and t[1] == pytest.approx(1 / 256)
    t, ecg = first.signals["ecg"]
    assert ecg.shape == (10240, 1), "the time column is not a signal"
    assert t[-1] == pytest.approx(20 - 1 / 512, abs=1e-6), "milliseconds become seconds"
    assert first.labels().tolist() == [0, 0] and levels[1].labels().tolist() == [1, 1]


def test_cl_drive_missing_participant_says_what_was_expected(tmp_path):
    _write(tmp_path)
    (tmp_path / "Labels" / "P02.csv").write_text("rating\n5\n")
    with pytest.raises(FileNotFoundError, match="eeg_data_level_1.csv"):
        read_cl_drive(tmp_path, "P02", range(1, 3))
