"""CL-Drive in its own layout -> per-level recordings of the four sensors and their ratings.

The dataset (Angkan et al. 2023) unpacks as

    CL-Drive/<EEG|ECG|EDA|Gaze>/<participant>/<eeg|ecg|eda|gaze>_data_level_<k>.csv
    CL-Drive/<Modality>/<participant>/<modality>_baseline_level_<k>.csv
    CL-Drive/Labels/<participant>.csv

one CSV per sensor and complexity level (k = 1..9, 3 min each) and a ratings file with the
driver's cognitive-load rating (1-9) every 10 s, either one column in level order or one
column per level. A column whose name contains "time" gives the sample times (seconds, or
milliseconds when samples are over half a unit apart); without one the sensor's nominal rate
is used.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

FOLDERS = {"eeg": "EEG", "ecg": "ECG", "eda": "EDA", "gaze": "Gaze"}
NOMINAL_HZ = {"eeg": 256.0, "ecg": 512.0, "eda": 128.0, "gaze": 50.0}
RATING_S = 10.0


@dataclass
class LevelRecording:
    level: int
    signals: dict[str, tuple[np.ndarray, np.ndarray]]  # sensor -> (times s, samples x ch)
    ratings: np.ndarray                                # one per 10 s

    def labels(self, threshold: float = 5.0) -> np.ndarray:
        """High load (1) where the rating is above `threshold` (binary, as in the paper)."""
        return (self.ratings > threshold).astype(int)


def _read_sensor(path: Path, sensor: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(path)
    time_cols = [c for c in frame.columns if "time" in str(c).lower()]
    values = frame.drop(columns=time_cols).select_dtypes("number")
    if values.shape[1] == 0:
        raise ValueError(f"{path}: no numeric signal columns (columns: {list(frame.columns)})")
    data = values.to_numpy(np.float64)
    if time_cols:
        t = frame[time_cols[0]].to_numpy(np.float64)
        t = t - t[0]
        if len(t) > 1 and np.median(np.diff(t)) > 0.5:  # no sensor here samples under 2 Hz
            t = t / 1000.0
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
