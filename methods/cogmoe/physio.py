"""The quality indices and stage-1 recovery on real recordings, with damage injected.

The shared real recordings (`../shared/data/physio`: ECG, EDA, PPG, respiration, EyeLink
pupil) are separate sessions, not one synchronised drive, so they test what does not need
synchrony: that the SNR index falls as injected noise rises, that the missing index reads the
injected gap, and how stage 1 fills a gap from the sensor alone (no other sensor to draw on)
against linear interpolation, the untouched recording being the reference.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import signal, stats

from edgert.methods.cache import recordings_folder
from edgert.methods.cogmoe.quality import indices
from edgert.methods.cogmoe.recovery import recover, to_grid

RATE = 256.0  # each recording is resampled to the aligned stream rate of the live pipeline
WINDOW_S = 10.0
SNRS_DB = (20.0, 10.0, 0.0, -10.0)


def _text(path: Path) -> np.ndarray:
    return np.loadtxt(path, comments="#")


def recordings(folder: Path) -> dict[str, tuple[np.ndarray, str]]:
    """name -> (signal at RATE, the quality band it is judged in)."""
    physio = folder / "physio"
    found = {}
    for name, file, rate, kind in (("ecg", "scipy_ecg_mitbih208_360hz.csv", 360, "ecg"),
                                   ("eda", "biosppy_eda.txt", 1000, "eda"),
                                   ("ppg", "biosppy_ppg.txt", 1000, "gaze"),
                                   ("resp", "biosppy_resp.txt", 1000, "eda")):
        path = physio / file
        if not path.exists():
            continue
        x = np.loadtxt(path, delimiter=",", skiprows=1)[:, 1] if path.suffix == ".csv" \
            else _text(path)
        found[name] = (signal.resample_poly(x - x.mean(), int(RATE), rate), kind)
    pupil = _pupil(physio / "test_eyelink.asc")
    if pupil is not None:
        found["pupil"] = (pupil, "gaze")
    return found


def _pupil(path: Path) -> np.ndarray | None:
    if not path.exists():
        return None
    import mne

    raw = mne.io.read_raw_eyelink(path, verbose="error")
    picks = [c for c in raw.ch_names if c.startswith("pupil")]
    x = raw.get_data(picks=picks[:1])[0]
    x = np.where(np.isnan(x), np.nanmedian(x), x)
    return signal.resample_poly(x, int(RATE), int(raw.info["sfreq"]))


def _windows(x: np.ndarray) -> list[np.ndarray]:
    n = int(WINDOW_S * RATE)
    return [x[s:s + n] for s in range(0, len(x) - n + 1, n)][:6]


def physio_checks(folder: Path | None = None, seed: int = 0) -> dict:
    folder = folder or recordings_folder()
    found = recordings(folder)
    if not found:
        return {"skipped": f"no recordings under {folder / 'physio'}"}
    rng = np.random.default_rng(seed)
    out = {}
    for name, (x, kind) in found.items():
        snr_rows, miss_err, rec, lin = [], [], [], []
        for w in _windows(x):
            power = w.var()
            for snr in SNRS_DB:
                noisy = w + rng.standard_normal(len(w)) * np.sqrt(power / 10 ** (snr / 10))
                q = indices(noisy[:, None], RATE, [np.array([0])], (kind,))[0]
                snr_rows.append((snr, q[0]))
            damaged = w.copy()
            start = int(rng.uniform(0.2, 0.6) * len(w))
            stop = start + int(0.15 * len(w))
            damaged[start:stop] = damaged[start]  # the sensor stopped: the value is held
            q = indices(damaged[:, None], RATE, [np.array([0])], (kind,))[0]
            miss_err.append(abs((1 - q[1]) - (stop - start) / len(w)))
            result = recover(damaged[:, None], RATE, [np.array([0])], anchor=0)
            truth = to_grid(w[:, None], RATE)[:, 0]
            mask = result.mask[0, :len(truth)]
            if mask.any():
                t = np.arange(len(truth))
                linear = np.interp(t[mask], t[~mask], result.signal[~mask, 0])
                scale = truth.std()
                rec.append(np.sqrt(np.mean((result.signal[mask, 0] - truth[mask]) ** 2)) / scale)
                lin.append(np.sqrt(np.mean((linear - truth[mask]) ** 2)) / scale)
        snr_rows = np.array(snr_rows)
        out[name] = {"snr_index_spearman": float(stats.spearmanr(snr_rows[:, 0],
                                                                 snr_rows[:, 1])[0]),
                     "missing_index_abs_error": float(np.mean(miss_err)),
                     "stage1_gap_rmse": float(np.mean(rec)) if rec else None,
                     "linear_gap_rmse": float(np.mean(lin)) if lin else None,
                     "windows": len(_windows(x))}
    return out
