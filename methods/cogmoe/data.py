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

`load` reads a user's `--data` (CL-Drive folders, ADABase files) into simulator-shaped drives
(`to_drive`), one list per participant, for `edgert train/evaluate cogmoe --data`.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from edgert.runtime.plugin import Data, DataError
from edgert.methods.cogmoe.simulate import CHANNELS, MODALITIES, RATES, Drive
from edgert.methods.unpickle import arrays_only

FOLDERS = {"eeg": "EEG", "ecg": "ECG", "eda": "EDA", "gaze": "Gaze"}
NOMINAL_HZ = {"eeg": 256.0, "ecg": 512.0, "eda": 128.0, "gaze": 50.0}
RATING_S = 10.0
ADABASE_COLUMNS = {"ecg": ("ECG",), "eda": ("EDA",),
                   "gaze": ("LEFT_PUPIL_DIAMETER", "LEFT_GAZE_POINT_ON_DISPLAY_AREA_X",
                            "LEFT_GAZE_POINT_ON_DISPLAY_AREA_Y", "RIGHT_PUPIL_DIAMETER")}
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


def read_cl_drive(root: str | Path, participant: str,
                  levels: range | list[int] = range(1, 10)) -> list[LevelRecording]:
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
    refuse_code(path)
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


def refuse_code(path: Path) -> None:
    """Read every pickle pandas' HDF5 reader would load from `path` (PyTables unpickles node
    attributes and object columns, even while merely opening a group) with an unpickler that
    builds arrays and containers only; a file that names anything else is refused before
    pandas or PyTables open it. The file is walked with h5py, which never unpickles."""
    import h5py

    def visit(obj) -> None:
        for name in obj.attrs:
            try:
                value = obj.attrs[name]
            except (OSError, TypeError, ValueError):
                continue  # a type h5py cannot read holds no pickle either
            _no_code(value, path, obj.name, name)
        if isinstance(obj, h5py.Dataset) and h5py.check_vlen_dtype(obj.dtype) == np.uint8:
            for row in obj[()].ravel():  # PyTables' object columns: one pickle a row
                _no_code(bytes(row), path, obj.name, "values")

    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise DataError(f"{path}: not an HDF5 file ({e})") from None
    with f:
        visit(f)
        f.visititems(lambda _, obj: visit(obj))


def _no_code(value, path: Path, where: str, name: str) -> None:
    raw = bytes(value) if isinstance(value, (bytes, np.bytes_)) else None
    if raw is None or not raw.endswith(b"."):
        return  # PyTables unpickles only byte strings that end as a pickle does
    try:
        arrays_only(raw)
    except pickle.UnpicklingError as e:
        if "is not an array or a string" in str(e):
            raise DataError(f"{path}: {where} {name!r} holds a pickle that names "
                            f"code ({e}); refused unread. ADABase files hold numbers and "
                            "strings only") from None
    except Exception:
        return  # not a pickle: PyTables keeps such bytes as they are


def participants(root: Path) -> list[str]:
    """The participants of a CL-Drive folder: one ratings file each under `Labels/`."""
    found = sorted(p.stem for p in (Path(root) / "Labels").glob("*.csv"))
    if not found:
        raise DataError(f"{root}: no Labels/<participant>.csv; a CL-Drive folder holds EEG/, "
                        "ECG/, EDA/, Gaze/ and Labels/")
    return found


def levels_of(root: Path, participant: str) -> list[int]:
    """The levels that have at least one sensor file, in order (a copy may hold fewer than 9)."""
    found = {int(p.stem.rsplit("_", 1)[1]) for p in Path(root).glob(
        f"*/{participant}/*_data_level_*.csv") if p.stem.rsplit("_", 1)[1].isdigit()}
    return sorted(found) or list(range(1, 10))


def _column(t: np.ndarray, x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    ok = np.isfinite(x)
    return np.interp(grid, t[ok], x[ok]) if ok.sum() > 1 else np.zeros(len(grid))


def to_drive(rec: LevelRecording, seed: int, high: bool | None = None,
             where: str = "") -> Drive:
    """One level on the simulator's sensor layout: each sensor's first channels interpolated
    onto its simulator rate, a sensor the dataset lacks all zero (stage 1 reads it as dead);
    load per second from the ratings (high above 5, one per 10 s), or `high` for the level."""
    seconds = int(min(t[-1] for t, _ in rec.signals.values()))
    if seconds < 10:
        raise DataError(f"{where} level {rec.level}: {seconds} s of signal; a window is 10 s")
    signals = {}
    for m in MODALITIES:
        grid = np.arange(int(seconds * RATES[m])) / RATES[m]
        want = len(CHANNELS[m])
        if m not in rec.signals:
            signals[m] = np.zeros((len(grid), want))
            continue
        t, x = rec.signals[m]
        if x.shape[1] < want:
            raise DataError(f"{where} level {rec.level}: sensor {m!r} has {x.shape[1]} "
                            f"signal column(s); CogMoE reads {want} ({', '.join(CHANNELS[m])})")
        signals[m] = np.stack([_column(t, x[:, c], grid) for c in range(want)], 1)
    if high is None:
        per_second = np.repeat(rec.labels(), int(RATING_S)).astype(float)
        load = np.resize(per_second, seconds) if len(per_second) else np.zeros(seconds)
    else:
        load = np.full(seconds, float(high))
    return Drive(signals, load, seed)


FORMATS = ("cl_drive", "adabase")


def load(data: Data) -> dict[str, list[Drive]]:
    """Each participant's levels as drives: a CL-Drive folder holds many participants, an
    ADABase file one (its levels above the study's median level are high load)."""
    out: dict[str, list[Drive]] = {}
    for path in map(Path, data.paths):
        fmt = data.format or ("cl_drive" if path.is_dir() else "adabase"
                              if path.suffix.lower() in (".h5", ".hdf5") else None)
        if fmt not in FORMATS:
            raise DataError(f"{path}: give a CL-Drive folder or ADABase .h5 files, or "
                            f"--format {'|'.join(FORMATS)}")
        try:
            if fmt == "cl_drive":
                for who in participants(path):
                    out[f"{path.name}/{who}"] = [
                        to_drive(r, 1000 * len(out) + r.level, where=f"{path}/{who}")
                        for r in read_cl_drive(path, who, levels_of(path, who))]
            else:
                recs = read_adabase(path)
                middle = np.median([r.level for r in recs])
                out[path.stem] = [to_drive(r, 1000 * len(out) + int(r.level),
                                           r.level > middle, str(path)) for r in recs]
        except DataError:
            raise
        except (ValueError, KeyError, OSError) as e:
            raise DataError(f"{path}: cannot read it as {fmt} ({type(e).__name__}: "
                            f"{str(e)[:200]})") from e
    return out
