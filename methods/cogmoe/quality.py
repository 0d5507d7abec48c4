"""Signal-quality indices per sensor and window: a real SNR estimate, the missing fraction and
an autocorrelation, each in [0, 1] (1 = good), then normalised across sensors.

SNR is the power in the sensor's physiological band against the residual outside it (what
broadband noise raises), not a constant; the autocorrelation is taken at one heartbeat for the
ECG (the beat repeats) and at 50 ms for the others (signal is smooth, noise is not).
"""
from __future__ import annotations

import numpy as np
from scipy import fft, signal

from methods.cogmoe.recovery import flat_runs

BANDS_HZ = {"eeg": (1.0, 30.0), "ecg": (0.5, 40.0), "eda": (0.0, 1.5), "gaze": (0.0, 4.0)}


def snr_db(x: np.ndarray, rate: float, band: tuple[float, float]) -> float:
    """In-band over out-of-band power (dB) of the valid samples of one channel."""
    if len(x) < int(rate):
        return -20.0
    f, psd = signal.welch(x - x.mean(), fs=rate, nperseg=min(len(x), int(2 * rate)))
    inside = (f >= band[0]) & (f <= band[1])
    p_in, p_out = psd[inside].sum(), psd[~inside & (f > 0)].sum()
    return float(10 * np.log10((p_in + 1e-12) / (p_out + 1e-12)))


def autocorrelation(x: np.ndarray, rate: float, beat: bool) -> float:
    if len(x) < int(2 * rate) or np.std(x) == 0:
        return 0.0
    x = (x - x.mean()) / x.std()
    if beat:
        n = len(x)
        size = fft.next_fast_len(2 * n, real=True)  # the valid length may be prime: slow
        spectrum = fft.rfft(x, size)
        acf = fft.irfft(spectrum * np.conj(spectrum), size)[:n] / (n - np.arange(n))
        return float(acf[int(0.33 * rate):int(1.5 * rate)].max())
    k = max(int(0.05 * rate), 1)
    return float(np.mean(x[:-k] * x[k:]))


def indices(window: np.ndarray, rate: float, sensors: list[np.ndarray],
            names: tuple[str, ...], missing: np.ndarray | None = None) -> np.ndarray:
    """(sensors, 3): SNR score, 1 - missing fraction, autocorrelation; each in [0, 1].
    `missing` is `flat_runs(window, rate)` when the caller has it already."""
    missing = flat_runs(window, rate) if missing is None else missing
    out = np.zeros((len(sensors), 3))
    for i, (ch, name) in enumerate(zip(sensors, names)):
        valid = ~missing[:, ch].any(1)
        x = window[valid][:, ch].mean(1)
        snr = snr_db(x, rate, BANDS_HZ[name])
        out[i] = [1 / (1 + np.exp(-(snr - 5.0) / 4.0)), valid.mean(),
                  np.clip(autocorrelation(x, rate, name == "ecg"), 0, 1)]
    return out


def relative(quality: np.ndarray) -> np.ndarray:
    """Each index over its mean across sensors: how a sensor compares with the others now."""
    return quality / (quality.mean(0, keepdims=True) + 1e-6)
