"""From a drive to what stage 2 sees: sensors held onto one clock (as the `align` node does),
10-s windows, stage-1 recovery, and per-sensor tokens of 2-s steps with quality indices."""
from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from edgert.methods.cogmoe.quality import indices, relative
from edgert.methods.cogmoe.recovery import (FREQS, GRID_HZ, POOL, Recovered, flat_runs, recover,
                                     unstair)
from edgert.methods.cogmoe.simulate import CHANNELS, MODALITIES, RATES, Drive

REFERENCE = "eeg"
WINDOW_S = 10.0
CHUNK = 8  # samples per LSL chunk each simulated sensor sends (the demo's replay)
# 2-s tokens: band log-powers of 0.5-s steps were noisy enough that stage 2 learned less
# from them (severe F1 0.83 / 0.82 at two model seeds; 2-s steps 0.86 / 0.86, 5-s 0.82 / 0.81)
STEP_S = 2.0
BANDS = len(FREQS) // 2
FEATURES = BANDS + 2  # band log-powers, level, masked fraction
QUALITY = 6  # each sensor's indices, absolute and relative to the other sensors
SENSORS = [np.arange(sum(len(CHANNELS[n]) for n in MODALITIES[:i]),
                     sum(len(CHANNELS[n]) for n in MODALITIES[:i + 1]))
           for i in range(len(MODALITIES))]
ANCHOR = MODALITIES.index("ecg")
ALIGNED_CHANNELS = tuple(f"{m}:{c}" for m in MODALITIES for c in CHANNELS[m])


def arrivals(t: np.ndarray, chunk: int) -> np.ndarray:
    """When each sample reaches a reader: with its chunk's last sample (chunks of `chunk`)."""
    last = np.minimum((np.arange(len(t)) // chunk + 1) * chunk, len(t)) - 1
    return t[last]


def hold(drive: Drive, chunk: int = CHUNK) -> np.ndarray:
    """Every sensor sample-and-held onto the reference sensor's clock as the live `align`
    node (which never waits) holds it: each sensor sends its samples in chunks of `chunk`,
    and a reference sample gets the latest sample of every other sensor that is at or before
    it and has arrived by the time the reference sample's own chunk does. A 32-Hz EDA sensor
    sending 8 samples at a time is then held up to 250 ms at a window's end, as live, and its
    steps carry power into the high bands, as live. Missing samples (NaN: the sensor sent
    nothing) are skipped, so the last received value is held."""
    t_ref = drive.times(REFERENCE)
    ready = arrivals(t_ref, chunk)
    cols = []
    for m in MODALITIES:
        x, t = drive.signals[m], drive.times(m)
        ok = ~np.isnan(x).any(1)
        at_or_before = np.searchsorted(t[ok], t_ref, side="right") - 1
        if m == REFERENCE:
            idx = at_or_before
        else:
            arrived = np.searchsorted(arrivals(t[ok], chunk), ready, side="right") - 1
            idx = np.minimum(at_or_before, arrived)
        cols.append(x[ok][np.clip(idx, 0, None)])
    return np.concatenate(cols, axis=1)


def tokens(rec: Recovered) -> np.ndarray:
    """(sensors, steps, FEATURES): per STEP_S step, band log-powers (pairs of CWT scales),
    the signal's level and the fraction masked, each averaged over the sensor's channels."""
    step = int(STEP_S * GRID_HZ)
    steps = rec.signal.shape[0] // step
    per_step = step // POOL
    out = np.zeros((len(SENSORS), steps, FEATURES), np.float32)
    for i, ch in enumerate(SENSORS):
        power = rec.power[ch].mean(0)[:2 * BANDS, :steps * per_step]
        power = power.reshape(BANDS, 2, steps, per_step).mean((1, 3))
        other = np.stack([rec.signal[:, ch].mean(1), rec.mask[ch].mean(0)])[:, :steps * step]
        out[i] = np.concatenate([power, other.reshape(2, steps, step).mean(-1)]).T
    return out


def window_input(window: np.ndarray, rate: float, beside: Executor | None = None
                 ) -> tuple[np.ndarray, np.ndarray, Recovered]:
    """Stage 1 and quality for one aligned window (its held steps interpolated, held
    stretches long enough to be missing kept): the model's (sensors * steps, FEATURES +
    QUALITY) input, the absolute quality (sensors, 3), and the recovery. With
    `beside`, the quality indices run there while the recovery runs here: numpy and scipy
    release the GIL in their loops and FFTs, so on 2 cores a window takes ~2 ms (~17 %) less."""
    missing = flat_runs(window, rate)
    window = np.where(missing, window, unstair(window))

    def score() -> np.ndarray:
        return indices(window, rate, SENSORS, MODALITIES, missing)

    pending = beside.submit(score) if beside else None
    rec = recover(window, rate, SENSORS, ANCHOR, missing=missing)
    tok = tokens(rec)
    quality = pending.result() if pending else score()
    both = np.concatenate([quality, relative(quality)], 1)
    q = np.repeat(both[:, None], tok.shape[1], axis=1)
    x = np.concatenate([tok, q], -1).reshape(-1, FEATURES + QUALITY)
    return x.astype(np.float32), quality, rec


def drive_windows(drive: Drive, hop_s: float = WINDOW_S) -> tuple[np.ndarray, np.ndarray]:
    """Aligned windows (windows, samples, channels) and their labels (mean load > 0.5)."""
    data = hold(drive)
    rate = RATES[REFERENCE]
    n, hop = int(WINDOW_S * rate), int(hop_s * rate)
    starts = range(0, len(data) - n + 1, hop)
    labels = [int(drive.load[int(s / rate):int(s / rate + WINDOW_S)].mean() > 0.5)
              for s in starts]
    return np.stack([data[s:s + n] for s in starts]), np.array(labels)
