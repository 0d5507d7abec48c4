"""A seeded simulated drive: four sensors driven by one latent cognitive load L(t) in [0, 1].

- EEG (256 Hz; Fz, Cz, Pz, Oz): 1/f background; frontal theta (6 Hz) grows and parietal alpha
  (10 Hz) shrinks with load.
- ECG (512 Hz): neurokit2 `ecg_simulate`, heart rate rising with load, per 10-s segment.
- EDA (32 Hz): neurokit2 `eda_simulate`, more skin-conductance responses under load.
- Gaze (60 Hz; pupil, x, y): pupil dilates with load; fixations shorten; blinks (pupil 0).
Each sensor runs at its own rate on a shared clock. `degrade` then damages copies per sensor
and segment (noise at a set SNR, motion spikes shared by every sensor at once, baseline wander,
flatlines, gaps, whole-segment disconnections, lags) and records what it did; the clean drive
is kept.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import signal

RATES = {"eeg": 256.0, "ecg": 512.0, "eda": 32.0, "gaze": 60.0}
CHANNELS = {"eeg": ("Fz", "Cz", "Pz", "Oz"), "ecg": ("ECG",), "eda": ("EDA",),
            "gaze": ("pupil", "gaze_x", "gaze_y")}
MODALITIES = tuple(RATES)
SEGMENT_S = 10.0
LEVELS = ("clean", "moderate", "severe")


@dataclass
class Drive:
    """Per-modality (samples x channels) arrays at their own rates, starting at t = 0 s."""

    signals: dict[str, np.ndarray]
    load: np.ndarray          # L(t) sampled once per second
    seed: int
    injected: dict[str, np.ndarray] = field(default_factory=dict)  # see `degrade`

    @property
    def seconds(self) -> float:
        return len(self.load)

    def times(self, modality: str) -> np.ndarray:
        return np.arange(len(self.signals[modality])) / RATES[modality]


def load_curve(seconds: int, rng: np.random.Generator) -> np.ndarray:
    """Blocks of 20-60 s at low or high load with 5-s ramps between them, once per second."""
    levels, total = [], 0
    while total < seconds:
        n = int(rng.integers(20, 61))
        levels += [rng.choice([rng.uniform(0.05, 0.35), rng.uniform(0.65, 0.95)])] * n
        total += n
    raw = np.array(levels[:seconds])
    return np.convolve(np.pad(raw, 2, mode="edge"), np.ones(5) / 5, mode="valid")


def _at(load: np.ndarray, rate: float, n: int) -> np.ndarray:
    return np.interp(np.arange(n) / rate, np.arange(len(load)), load)


def _pink(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return signal.lfilter([1.0], [1.0, -0.97], rng.standard_normal(shape), axis=0)


def _rhythm(rng: np.random.Generator, n: int, rate: float, centre: float) -> np.ndarray:
    sos = signal.butter(2, [centre - 1.5, centre + 1.5], "bandpass", fs=rate, output="sos")
    x = signal.sosfilt(sos, rng.standard_normal(n + int(rate)))[int(rate):]
    return x / x.std()


def eeg(load: np.ndarray, rng: np.random.Generator, gain: float) -> np.ndarray:
    rate = RATES["eeg"]
    n = int(len(load) * rate)
    l = _at(load, rate, n)
    theta = _rhythm(rng, n, rate, 6.0) * (1.0 + 1.2 * l)
    alpha = _rhythm(rng, n, rate, 10.0) * (1.6 - 1.2 * l)
    weights_theta = np.array([1.0, 0.6, 0.2, 0.1])
    weights_alpha = np.array([0.2, 0.4, 1.0, 1.1])
    x = 3.0 * _pink(rng, (n, 4)) + 4.0 * (np.outer(theta, weights_theta)
                                          + np.outer(alpha, weights_alpha))
    return (gain * x).astype(np.float32)


def ecg(load: np.ndarray, rng: np.random.Generator, base_hr: float) -> np.ndarray:
    import neurokit2 as nk  # here: the live node reads this module's layout only

    rate = int(RATES["ecg"])
    parts = []
    for start in range(0, len(load), int(SEGMENT_S)):
        seg = load[start:start + int(SEGMENT_S)]
        hr = base_hr + 25.0 * seg.mean()
        parts.append(nk.ecg_simulate(duration=len(seg), sampling_rate=rate, heart_rate=hr,
                                     heart_rate_std=2.0, method="simple",
                                     random_state=int(rng.integers(2**31))))
    return np.concatenate(parts)[:, None].astype(np.float32)


def eda(load: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    import neurokit2 as nk

    rate = int(RATES["eda"])
    parts, level = [], rng.uniform(2.0, 6.0)
    for start in range(0, len(load), int(SEGMENT_S)):
        seg = load[start:start + int(SEGMENT_S)]
        x = nk.eda_simulate(duration=len(seg), sampling_rate=rate,
                            scr_number=int(rng.poisson(0.5 + 3.0 * seg.mean())),
                            drift=0.0, noise=0.005, random_state=int(rng.integers(2**31))
                            )[:len(seg) * rate]
        x = x - x[0] + (parts[-1][-1] if parts else level)
        parts.append(x + 0.04 * seg.mean() * np.arange(len(x)) / rate)
    return np.concatenate(parts)[:, None].astype(np.float32)


def gaze(load: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    rate = RATES["gaze"]
    n = int(len(load) * rate)
    l = _at(load, rate, n)
    pupil = 3.2 + 0.9 * l + 0.1 * signal.lfilter([0.02], [1, -0.98], rng.standard_normal(n))
    xy = np.zeros((n, 2))
    i = 0
    while i < n:
        fixation = max(int(rng.exponential(0.6 - 0.35 * l[i]) * rate), 3)
        xy[i:i + fixation] = rng.normal(0, 5.0, 2) + rng.normal(0, 0.1, (min(fixation, n - i), 2))
        i += fixation
    for start in np.flatnonzero(rng.random(n) < (0.3 - 0.15 * l) / rate):
        pupil[start:start + int(0.15 * rate)] = 0.0
    return np.column_stack([pupil, xy]).astype(np.float32)


def simulate(seconds: int, seed: int) -> Drive:
    """A clean drive of `seconds` seconds for the subject `seed`."""
    rng = np.random.default_rng([seed, 11])
    load = load_curve(seconds, rng)
    signals = {"eeg": eeg(load, rng, np.exp(rng.normal(0, 0.2))),
               "ecg": ecg(load, rng, rng.uniform(60, 75)), "eda": eda(load, rng),
               "gaze": gaze(load, rng)}
    return Drive(signals, load, seed)


@dataclass(frozen=True)
class Degradation:
    """Per segment and sensor, the chance of each damage and its size."""

    noise: float = 0.0
    snr_db: tuple[float, float] = (10.0, 20.0)
    spike: float = 0.0
    wander: float = 0.0
    flatline: float = 0.0
    gap: float = 0.0
    lag: float = 0.0
    max_lag_s: float = 0.0
    disconnect: float = 0.0  # the sensor sends nothing for the whole segment


PRESETS = {"clean": Degradation(),
           "moderate": Degradation(0.5, (0.0, 10.0), 0.3, 0.3, 0.1, 0.1, 0.3, 0.25, 0.05),
           "severe": Degradation(0.9, (-10.0, 0.0), 0.6, 0.5, 0.3, 0.3, 0.5, 0.5, 0.15)}


def degrade(drive: Drive, level: str | Degradation, seed: int) -> Drive:
    """A damaged copy. `injected[m]` holds per segment: noise power over signal power, the
    fraction of samples missing (flatline, gap or disconnection; NaN for the last two), and
    the lag in seconds."""
    spec = PRESETS[level] if isinstance(level, str) else level
    rng = np.random.default_rng([drive.seed, 12, seed])
    unplugged = np.random.default_rng([drive.seed, 13, seed])  # apart: the rest stays as drawn
    segments = int(np.ceil(drive.seconds / SEGMENT_S))
    bumps = rng.random(segments) < spec.spike
    bump_at = rng.uniform(0.1, 0.9, segments)
    out, injected = {}, {}
    for m, clean in drive.signals.items():
        rate = RATES[m]
        x = clean.astype(float).copy()
        record = np.zeros((segments, 3))
        for k in range(segments):
            a, b = int(k * SEGMENT_S * rate), min(int((k + 1) * SEGMENT_S * rate), len(x))
            part = x[a:b]
            power = np.var(clean[a:b], axis=0) + 1e-12
            shift = int(rng.uniform(-spec.max_lag_s, spec.max_lag_s) * rate) \
                if rng.random() < spec.lag else 0
            if rng.random() < spec.noise:
                snr = rng.uniform(*spec.snr_db)
                noise = rng.standard_normal(part.shape) * np.sqrt(power / 10 ** (snr / 10))
                part += noise
                record[k, 0] = float(np.mean(noise.var(0) / power))
            if rng.random() < spec.wander:
                t = np.arange(len(part)) / rate
                freq, phase = rng.uniform(0.05, 0.3), rng.uniform(0, 2 * np.pi)
                part += np.sin(2 * np.pi * freq * t + phase)[:, None] * 2 * np.sqrt(power)
            if bumps[k]:  # the same instant in every sensor: a bump in the road
                at = int(bump_at[k] * len(part))
                width = max(int(0.2 * rate), 1)
                part[at:at + width] += 8 * np.sqrt(power) * np.hanning(
                    len(part[at:at + width]))[:, None]
            if shift:  # the sensor's clock is off: everything it recorded moves
                part[:] = np.roll(part, shift, axis=0)
                record[k, 2] = shift / rate
            missing = np.zeros(len(part), bool)
            for kind, chance in (("flat", spec.flatline), ("gap", spec.gap)):
                if rng.random() < chance:
                    start = int(rng.uniform(0, 0.7) * len(part))
                    stop = start + int(rng.uniform(0.1, 0.3) * len(part))
                    part[start:stop] = part[start] if kind == "flat" else np.nan
                    missing[start:stop] = True
            if unplugged.random() < spec.disconnect:
                part[:] = np.nan
                missing[:] = True
            record[k, 1] = missing.mean()
        out[m] = x.astype(np.float32)
        injected[m] = record
    return Drive(out, drive.load, drive.seed, injected)
