"""CL-Drive and ADABase in their own layouts -> per-level recordings of the sensors CogMoE
uses, and the load labels each dataset gives.

The dataset (Angkan et al. 2023) unpacks as

    CL-Drive/<EEG|ECG|EDA|Gaze>/<participant>/<eeg|ecg|eda|gaze>_data_level_<k>.csv
    CL-Drive/<Modality>/<participant>/<modality>_baseline_level_<k>.csv
    CL-Drive/Labels/<participant>.csv

one CSV per sensor and complexity level (k = 1..9, 3 min each) and a ratings file with the
driver's cognitive-load rating (1-9) every 10 s, either one column in level order or one
column per level. A column whose name contains "time" gives the sample times (seconds, or
milliseconds when samples are over half a unit apart); without one the sensor's nominal rate
is used.

ADABase (Oppelt et al. 2023) ships one HDF5 file per subject holding a pandas table
`SIGNALS`: every sensor on one time axis (a sensor's columns are empty between its own
samples), with `STUDY` (n-back or k-drive) and `LEVEL` columns. The default column names
(`ADABASE_COLUMNS`) follow the release's ECG, EDA and Tobii eye-tracker naming; pass
`columns` where a copy differs. ADABase recorded no EEG, so its recordings have none.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

FOLDERS = {"eeg": "EEG", "ecg": "ECG", "eda": "EDA", "gaze": "Gaze"}
NOMINAL_HZ = {"eeg": 256.0, "ecg": 512.0, "eda": 128.0, "gaze": 50.0}
RATING_S = 10.0
ADABASE_COLUMNS = {"ecg": ("ECG",), "eda": ("EDA",),
                   "gaze": ("LEFT_PUPIL_DIAMETER", "RIGHT_PUPIL_DIAMETER",
                            "LEFT_GAZE_POINT_ON_DISPLAY_AREA_X",
                            "LEFT_GAZE_POINT_ON_DISPLAY_AREA_Y")}
ADABASE_STUDIES = ("n-back", "k-drive")


@dataclass
class LevelRecording:
    """One task level: CL-Drive's has the driver's ratings (1-9, one per 10 s); ADABase has
    none over time (empty), its level being the label."""

    level: int
    signals: dict[str, tuple[np.ndarray, np.ndarray]]  # sensor -> (times s, samples x ch)
    ratings: np.ndarray

    def labels(self, threshold: float = 5.0) -> np.ndarray:
        """High load (1) where the rating is above `threshold` (binary, as in the paper)."""
        if not len(self.ratings):
            raise ValueError(f"level {self.level} has no ratings over time (ADABase): its "
                             "level is the label")
        return (self.ratings > threshold).astype(int)


def _seconds(t: np.ndarray) -> np.ndarray:
    """Times from the first sample, in seconds (milliseconds when samples are over half a
    unit apart: no sensor here samples under 2 Hz)."""
    t = t - t[0]
    if len(t) > 1 and np.median(np.diff(t)) > 0.5:
        t = t / 1000.0
    return t


def _read_sensor(path: Path, sensor: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(path)
    time_cols = [c for c in frame.columns if "time" in str(c).lower()]
    values = frame.drop(columns=time_cols).select_dtypes("number")
    if values.shape[1] == 0:
        raise ValueError(f"{path}: no numeric signal columns (columns: {list(frame.columns)})")
    data = values.to_numpy(np.float64)
    if time_cols:
        t = _seconds(frame[time_cols[0]].to_numpy(np.float64))
    else:
        t = np.arange(len(data)) / NOMINAL_HZ[sensor]
    return t, data


def _ratings(path: Path, levels: int) -> list[np.ndarray]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: CL-Drive ratings not found (Labels/<participant>.csv)")
    frame = pd.read_csv(path).select_dtypes("number")
    if frame.shape[1] >= levels:
        return [frame.iloc[:, k].dropna().to_numpy() for k in range(levels)]
    flat = frame.iloc[:, 0].dropna().to_numpy()
    return list(np.array_split(flat, levels))


def read_cl_drive(root: str | Path, participant: str, levels: range = range(1, 10)
                  ) -> list[LevelRecording]:
    """Every level of one participant that has at least one sensor file."""
    root = Path(root)
    ratings = _ratings(root / "Labels" / f"{participant}.csv", len(levels))
    out = []
    for i, k in enumerate(levels):
        signals = {}
        for sensor, folder in FOLDERS.items():
            path = root / folder / participant / f"{sensor}_data_level_{k}.csv"
            if path.exists():
                signals[sensor] = _read_sensor(path, sensor)
        if signals:
            out.append(LevelRecording(k, signals, ratings[i]))
    if not out:
        raise FileNotFoundError(f"{root}: no CL-Drive files for participant {participant!r} "
                                f"(expected e.g. {root}/EEG/{participant}/eeg_data_level_1.csv)")
    return out


def _times(frame: pd.DataFrame, path: Path) -> np.ndarray:
    """Seconds of every row: a column named like "time", else a datetime or numeric index."""
    time_cols = [c for c in frame.columns if "time" in str(c).lower()]
    if time_cols:
        values = frame[time_cols[0]]
    elif isinstance(frame.index, pd.DatetimeIndex | pd.TimedeltaIndex):
        return (frame.index - frame.index[0]).total_seconds().to_numpy()
    elif pd.api.types.is_numeric_dtype(frame.index):
        values = frame.index.to_series()
    else:
        raise ValueError(f"{path}: no time column or time index in SIGNALS (columns: "
                         f"{list(frame.columns)[:12]})")
    if pd.api.types.is_datetime64_any_dtype(values):
        return (values - values.iloc[0]).dt.total_seconds().to_numpy()
    return _seconds(values.to_numpy(np.float64))


def read_adabase(path: str | Path, study: str = "k-drive",
                 columns: dict[str, tuple[str, ...]] = ADABASE_COLUMNS,
                 key: str = "SIGNALS") -> list[LevelRecording]:
    """One subject's file -> one recording per level of `study`, each sensor on its own
    samples (the rows where its columns hold values); sensors whose columns are absent are
    left out, not invented."""
    path = Path(path)
    if study not in ADABASE_STUDIES:
        raise ValueError(f"ADABase study {study!r}: choose from {ADABASE_STUDIES}")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no ADABase subject file (one <subject>.h5 each)")
    frame = pd.read_hdf(path, key)
    missing = sorted({"STUDY", "LEVEL"} - set(frame.columns))
    if missing:
        raise ValueError(f"{path}: table {key!r} has no column(s) {missing}; ADABase marks "
                         "each row's study and level")
    t = _times(frame, path)
    rows = frame["STUDY"].astype(str).str.lower() == study
    if not rows.any():
        raise ValueError(f"{path}: no rows of study {study!r} (studies here: "
                         f"{sorted(frame['STUDY'].astype(str).unique())})")
    out = []
    for level in sorted(frame.loc[rows, "LEVEL"].dropna().unique()):
        part = rows & (frame["LEVEL"] == level)
        signals = {}
        for sensor, names in columns.items():
            present = [c for c in names if c in frame.columns]
            if not present:
                continue
            values = frame.loc[part, present]
            kept = values.notna().any(axis=1).to_numpy()
            if kept.any():
                stamps = t[part.to_numpy()][kept]
                signals[sensor] = (stamps - stamps[0], values[kept].to_numpy(np.float64))
        out.append(LevelRecording(int(level), signals, np.zeros(0)))
    return out
