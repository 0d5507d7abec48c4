"""Simulated drives written in CL-Drive's own layout (one CSV per sensor and level, ratings
every 10 s), for CogMoE's `--data` path."""
from pathlib import Path

import numpy as np
import pandas as pd

from edgert.methods.cogmoe.simulate import CHANNELS, RATES, simulate

FOLDERS = {"eeg": "EEG", "ecg": "ECG", "eda": "EDA", "gaze": "Gaze"}


def write_cl_drive(root: Path, participants: list[str], seconds: int = 60) -> Path:
    """Each participant: level 1 the first half of a simulated drive with its load held low,
    level 2 held high; ratings 2 and 8 every 10 s; sensors with a millisecond time column."""
    for k, who in enumerate(participants):
        ratings = {}
        for level, load in ((1, 0.1), (2, 0.9)):
            drive = simulate(seconds, 40 + 10 * k + level)
            for sensor, folder in FOLDERS.items():
                x = drive.signals[sensor]
                frame = pd.DataFrame(x, columns=list(CHANNELS[sensor]))
                frame.insert(0, "Timestamp", 1.7e12 + np.arange(len(x)) * 1000 / RATES[sensor])
                path = root / folder / who
                path.mkdir(parents=True, exist_ok=True)
                frame.to_csv(path / f"{sensor}_data_level_{level}.csv", index=False)
            ratings[f"level_{level}"] = [2 if load < 0.5 else 8] * (seconds // 10)
        (root / "Labels").mkdir(exist_ok=True)
        pd.DataFrame(ratings).to_csv(root / "Labels" / f"{who}.csv", index=False)
    return root


ADABASE_RATE = 128.0


def write_adabase(path: Path, seed: int, seconds: int = 30) -> Path:
    """One ADABase subject file: k-drive levels 0 and 2 of simulated drives (low and high
    load), ECG, EDA and gaze on one 128-Hz time axis in milliseconds, no EEG (as recorded)."""
    parts = []
    for level in (0, 2):
        drive = simulate(seconds, seed + level)
        n = int(seconds * ADABASE_RATE)
        t = np.arange(n) / ADABASE_RATE

        def at(sensor: str, column: int) -> np.ndarray:
            x = drive.signals[sensor][:, column]
            return np.interp(t, np.arange(len(x)) / RATES[sensor], x)

        parts.append(pd.DataFrame({
            "ECG": at("ecg", 0), "EDA": at("eda", 0), "LEFT_PUPIL_DIAMETER": at("gaze", 0),
            "LEFT_GAZE_POINT_ON_DISPLAY_AREA_X": at("gaze", 1),
            "LEFT_GAZE_POINT_ON_DISPLAY_AREA_Y": at("gaze", 2),
            "RIGHT_PUPIL_DIAMETER": at("gaze", 0), "STUDY": "k-drive", "LEVEL": level}))
    frame = pd.concat(parts, ignore_index=True)
    frame.insert(0, "TIMESTAMP", 1.7e12 + np.arange(len(frame)) * 1000 / ADABASE_RATE)
    frame.to_hdf(path, key="SIGNALS", format="table")
    return path
