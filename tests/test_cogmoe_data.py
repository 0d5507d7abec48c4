"""CogMoE's CL-Drive and ADABase loaders on small files written here in each dataset's own
layout."""
import os

import numpy as np
import pandas as pd
import pytest

from edgert.runtime.plugin import DataError
from edgert.methods.cogmoe.data import read_adabase, read_cl_drive


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


def _write_adabase(path, rate=64):
    """One subject: ECG at every row, EDA on every 8th, pupil and gaze on every 2nd; two
    k-drive levels of 4 s and an n-back level; times in milliseconds."""
    rng = np.random.default_rng(0)
    n = 4 * rate
    parts = []
    for study, level in (("k-drive", 0), ("k-drive", 2), ("n-back", 1)):
        part = pd.DataFrame({"ECG": rng.normal(size=n), "EDA": np.nan,
                             "LEFT_PUPIL_DIAMETER": np.nan, "RIGHT_PUPIL_DIAMETER": np.nan,
                             "LEFT_GAZE_POINT_ON_DISPLAY_AREA_X": np.nan,
                             "LEFT_GAZE_POINT_ON_DISPLAY_AREA_Y": np.nan,
                             "STUDY": study, "LEVEL": level})
        part.loc[::8, "EDA"] = rng.normal(size=n // 8)
        gaze = [c for c in part.columns if c.startswith(("LEFT", "RIGHT"))]
        part.loc[::2, gaze] = rng.normal(size=(n // 2, len(gaze)))
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    frame.insert(0, "TIMESTAMP", 1.7e12 + np.arange(len(frame)) * 1000.0 / rate)
    frame.to_hdf(path, key="SIGNALS", format="table")


def test_adabase_levels_sensors_on_their_own_samples(tmp_path):
    path = tmp_path / "S01.h5"
    _write_adabase(path)
    levels = read_adabase(path, "k-drive")
    assert [r.level for r in levels] == [0, 2]
    first = levels[0]
    assert set(first.signals) == {"ecg", "eda", "gaze"}, "no EEG in ADABase: left out"
    t, ecg = first.signals["ecg"]
    assert ecg.shape == (256, 1) and t[1] == pytest.approx(1 / 64)
    t, eda = first.signals["eda"]
    assert eda.shape == (32, 1) and t[1] == pytest.approx(8 / 64), "EDA's own 8-Hz samples"
    assert not np.isnan(eda).any()
    t, gaze = first.signals["gaze"]
    assert gaze.shape == (128, 4)
    assert [r.level for r in read_adabase(path, "n-back")] == [1]
    with pytest.raises(ValueError, match="its level is the label"):
        first.labels()


def test_adabase_bad_input_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "S01.h5"
    _write_adabase(path)
    with pytest.raises(ValueError, match="choose from"):
        read_adabase(path, "driving")
    with pytest.raises(FileNotFoundError, match="S02.h5"):
        read_adabase(tmp_path / "S02.h5")
    bad = tmp_path / "S03.h5"
    pd.DataFrame({"ECG": [1.0, 2.0], "STUDY": ["k-drive"] * 2}).to_hdf(bad, key="SIGNALS")
    with pytest.raises(ValueError, match=r"S03.h5.*\['LEVEL'\]"):
        read_adabase(bad)


class _Ran:
    """Unpickled unsafely, writes a marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("where", ["column", "attribute"])
def test_a_crafted_adabase_file_runs_nothing_and_is_refused_by_name(tmp_path, where):
    """pandas' HDF5 reader unpickles object columns and PyTables unpickles attributes: a file
    whose pickles name code is refused before pandas opens it."""
    import tables

    marker, path = tmp_path / "ran", tmp_path / "S09.h5"
    frame = pd.DataFrame({"STUDY": ["k-drive"] * 2, "LEVEL": [1, 1], "ECG": [1.0, 2.0]})
    if where == "column":
        frame["ECG"] = [_Ran(str(marker)), 2.0]
        frame.to_hdf(path, key="SIGNALS")
    else:
        frame.to_hdf(path, key="SIGNALS", format="table")
        with tables.open_file(str(path), "a") as f:
            f.root.SIGNALS._v_attrs.note = _Ran(str(marker))
    marker.unlink(missing_ok=True)
    with pytest.raises(DataError, match=r"S09.h5.*names code.*refused"):
        read_adabase(path)
    assert not marker.exists(), "code in the file ran"
