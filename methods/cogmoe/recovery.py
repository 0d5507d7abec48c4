"""Stage 1: quality-aware synchronisation and recovery of one multi-sensor window.

On a common 100-Hz grid, per channel: a Morlet continuous wavelet transform (0.5-40 Hz,
Torrence & Compo 1998); each sensor's lag against an anchor sensor from the 2-D
cross-correlation of magnitude maps (the smallest shift among near-maximal peaks, zero when no
peak stands out); a cross-modal artifact mask (missing samples, and energy bursts, made common
when two sensors burst together, as a bump in the road does); masked log-magnitudes first
predicted from the other sensors (ridge), then refined by iterative low-rank completion that
rewrites masked entries only; phases carried on at each scale's frequency; the inverse
transform fills the masked samples.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy import fft, signal

GRID_HZ = 100.0
FREQS = np.geomspace(0.5, 40.0, 16)
W0 = 6.0
C_DELTA = 0.776  # Morlet (w0 = 6) reconstruction factor, Torrence & Compo table 2


def scales(freqs: np.ndarray = FREQS) -> np.ndarray:
    return (W0 + np.sqrt(2 + W0 ** 2)) / (4 * np.pi * freqs)


@lru_cache(maxsize=8)
def _daughters(n: int, rate: float, freqs: tuple[float, ...]) -> tuple[int, np.ndarray]:
    """FFT length and the Morlet daughters' spectra (freqs, size), padded past the widest
    wavelet's reach so the circular convolution does not wrap."""
    s = scales(np.array(freqs))[:, None]
    size = fft.next_fast_len(n + int(2 * s.max() * rate))
    omega = 2 * np.pi * fft.fftfreq(size, 1 / rate)
    daughter = (np.pi ** -0.25 * np.sqrt(2 * np.pi * s * rate)
                * np.exp(-0.5 * (s * omega - W0) ** 2) * (omega > 0))
    return size, daughter.astype(np.complex64)


def cwt(x: np.ndarray, rate: float = GRID_HZ, freqs: np.ndarray = FREQS) -> np.ndarray:
    """(channels, samples) -> (channels, freqs, samples) complex, unit-energy Morlet."""
    n = x.shape[-1]
    size, daughter = _daughters(n, float(rate), tuple(np.asarray(freqs, float)))
    spectrum = fft.fft(x.astype(np.float32), size, axis=-1)
    return fft.ifft(spectrum[:, None, :] * daughter[None], axis=-1)[..., :n]


def icwt(w: np.ndarray, rate: float = GRID_HZ, freqs: np.ndarray = FREQS) -> np.ndarray:
    """Inverse by Torrence & Compo's eq. 11: the band 0.5-40 Hz of the signal. Only the real
    part of `w` counts, so a real array of Re(W) does as well."""
    s = scales(freqs)
    dj = np.log2(s[0] / s[-1]) / (len(s) - 1)
    factor = dj * np.sqrt(1 / rate) / (C_DELTA * np.pi ** -0.25)
    return factor * (np.real(w) / np.sqrt(s)[:, None]).sum(-2)


@dataclass
class Recovered:
    signal: np.ndarray   # (samples, channels) on the grid, masked samples filled
    power: np.ndarray    # (channels, freqs, samples) log |W|^2 after recovery
    mask: np.ndarray     # (channels, samples) True where the input was missing or artifact
    lags: np.ndarray     # per sensor, seconds it was shifted back


def flat_runs(x: np.ndarray, rate: float, min_s: float = 0.3) -> np.ndarray:
    """(samples, channels) True inside runs of identical values lasting >= min_s (a sensor
    that stopped: LSL sends nothing, the aligner holds the last value), or NaN. `min_s` is
    longer than a slow sensor's chunk period (8 EDA samples at 32 Hz hold for 250 ms)."""
    same = np.vstack([np.zeros((1, x.shape[1]), bool), np.diff(x, axis=0) == 0])
    run = np.cumsum(~same, axis=0) - 1 + np.arange(x.shape[1]) * len(x)  # one id per run
    length = np.bincount(run.ravel(), minlength=x.size)[run]
    return np.isnan(x) | (length >= max(int(min_s * rate), 2))


def to_grid(x: np.ndarray, rate: float) -> np.ndarray:
    """(samples, channels) at `rate` -> the 100-Hz grid (polyphase, anti-aliased)."""
    up, down, taps = _resampler(float(rate))
    return signal.resample_poly(x, up, down, axis=0, window=taps)


@lru_cache(maxsize=8)
def _resampler(rate: float) -> tuple[int, int, np.ndarray]:
    """Up and down factors and resample_poly's own default filter (Kaiser, beta 5), designed
    once per rate rather than on every window."""
    f = Fraction(GRID_HZ / rate).limit_denominator(1000)
    most = max(f.numerator, f.denominator)
    return f.numerator, f.denominator, signal.firwin(20 * most + 1, 1 / most,
                                                     window=("kaiser", 5.0))


def _zmap(magnitude: np.ndarray) -> np.ndarray:
    log = np.log(magnitude + 1e-12)
    return (log - log.mean(-1, keepdims=True)) / (log.std(-1, keepdims=True) + 1e-9)


def estimate_lag(anchor: np.ndarray, other: np.ndarray, max_lag: int,
                 near: float = 0.9, floor: float = 0.3) -> int:
    """Lag (samples) of `other` behind `anchor` from the cross-correlation of two z-scored
    (freqs, samples) maps, summed over frequency: the smallest |lag| whose correlation is
    within `near` of the peak; 0 when the peak is under `floor` (nothing to align on)."""
    n = anchor.shape[-1]
    size = fft.next_fast_len(2 * n)
    corr = fft.irfft(np.conj(fft.rfft(anchor, size)) * fft.rfft(other, size), size).sum(0)
    corr /= anchor.shape[0] * n
    lags = np.r_[0:max_lag + 1, -max_lag:0]
    values = np.r_[corr[:max_lag + 1], corr[-max_lag:]]
    best = values.max()
    if best < floor:
        return 0
    candidates = lags[values >= near * best]
    return int(candidates[np.argmin(np.abs(candidates))])


def low_rank_complete(matrix: np.ndarray, mask: np.ndarray, rank: int = 4,
                      iterations: int = 3, pool: int = 8) -> np.ndarray:
    """Iterative rank-`rank` SVD projection that rewrites only the masked entries; observed
    entries stay as they are. The SVD is taken on a randomized range of the matrix, and runs
    on blocks of `pool` samples (log-magnitude envelopes are smooth), then spreads back."""
    if not mask.any():
        return matrix
    n = matrix.shape[1] // pool * pool
    coarse = matrix[:, :n].reshape(len(matrix), -1, pool).mean(-1)
    holes = mask[:, :n].reshape(len(mask), -1, pool).any(-1)
    filled = coarse.copy()
    probe = np.random.default_rng(0).standard_normal((coarse.shape[1], rank + 4))
    for _ in range(iterations):
        mean = filled.mean(1, keepdims=True)
        centred = filled - mean
        # the top left singular vectors by a randomized range finder (Halko et al. 2011)
        basis, _ = np.linalg.qr(centred @ (centred.T @ (centred @ probe)))
        u, _, _ = np.linalg.svd(basis.T @ centred, full_matrices=False)
        top = basis @ u[:, :rank]
        filled = np.where(holes, top @ (top.T @ centred) + mean, coarse)
    block = np.minimum(np.arange(matrix.shape[1]) // pool, filled.shape[1] - 1)
    return np.where(mask, filled[:, block], matrix)


def _cross_modal_fill(logmag: np.ndarray, mask: np.ndarray, groups: list[np.ndarray],
                      ridge: float = 1.0) -> np.ndarray:
    """Masked log-magnitudes of each sensor predicted from the other sensors' mean maps at
    the same instants, by ridge regression fitted where both are observed; each channel keeps
    its own offset from its sensor's mean."""
    out = logmag.copy()
    maps = np.stack([logmag[rows].reshape(-1, len(FREQS), logmag.shape[1]).mean(0)
                     for rows in groups])
    seen = np.stack([~mask[rows].any(0) for rows in groups])
    for i, rows in enumerate(groups):
        target = mask[rows]
        others = [j for j in range(len(groups)) if j != i and seen[j][target.any(0)].all()]
        fit = seen[i] & seen[others].all(0) if others else seen[i]
        if not target.any() or not others or fit.sum() < 20:
            continue
        x = maps[others].reshape(-1, logmag.shape[1]).T
        y = maps[i].T
        xm, ym = x[fit].mean(0), y[fit].mean(0)
        xc = x[fit] - xm
        coef = np.linalg.solve(xc.T @ xc + ridge * fit.sum() * np.eye(x.shape[1]),
                               xc.T @ (y[fit] - ym))
        pred = ((x - xm) @ coef + ym).T
        offsets = (logmag[rows].reshape(-1, len(FREQS), logmag.shape[1])
                   - maps[i][None]).reshape(len(rows), -1)
        observed = ~target
        offset = (offsets * observed).sum(1) / np.maximum(observed.sum(1), 1)
        r, c = np.nonzero(target)
        out[rows[r], c] = pred[r % len(FREQS), c] + offset[r]
    return out


def _carry_phase(phase: np.ndarray, mask: np.ndarray, freqs: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Masked phases continued from the last observed one at each row's frequency, and an
    amplitude weight that fades over one period: a coherent continuation near the edge of a
    gap, the mean (zero) deep inside it, where the true phase is unknowable."""
    n = phase.shape[1]
    t = np.arange(n, dtype=np.int32)
    last = np.maximum.accumulate(np.where(mask, -1, t), axis=1)
    since = (t - last).astype(np.float32)
    step = (2 * np.pi * freqs / GRID_HZ).astype(np.float32)[:, None]
    ref = np.take_along_axis(phase, np.clip(last, 0, None), 1)
    carried = np.where(mask & (last >= 0), ref + since * step, phase)
    fade = np.where(mask, np.exp(-since * step / (2 * np.pi)), 1.0)
    return carried, fade


def recover(window: np.ndarray, rate: float, sensors: list[np.ndarray], anchor: int = 1,
            max_lag_s: float = 0.6, burst_z: float = 4.0, rank: int = 4,
            missing: np.ndarray | None = None) -> Recovered:
    """Stage 1 on one window (samples x channels at `rate`); `sensors` lists each sensor's
    channel indices; `anchor` is the sensor others are aligned to; `missing` is
    `flat_runs(window, rate)` when the caller has it already."""
    missing = flat_runs(window, rate) if missing is None else missing
    present = ~missing
    clean = np.where(present, window, 0.0)
    fill = clean.sum(0) / np.maximum(present.sum(0), 1)
    both = to_grid(np.hstack([np.where(missing, fill, window), missing]), rate).T
    x, mask = both[:window.shape[1]], both[window.shape[1]:] > 0.05
    n = x.shape[1]
    w = cwt(x)
    maps = [_zmap(np.abs(w[ch]).mean(0)) for ch in sensors]
    lags = np.zeros(len(sensors))
    max_lag = int(max_lag_s * GRID_HZ)
    for i, ch in enumerate(sensors):
        if i == anchor:
            continue
        lag = estimate_lag(maps[anchor], maps[i], max_lag)
        if lag:
            w[ch] = np.roll(w[ch], -lag, axis=-1)
            x[ch] = np.roll(x[ch], -lag, axis=-1)
            mask[ch] = np.roll(mask[ch], -lag, axis=-1)
            edge = slice(n - lag, n) if lag > 0 else slice(0, -lag)
            mask[ch, edge] = True
            lags[i] = lag / GRID_HZ
    mask |= _bursts(w, sensors, burst_z)
    nf = len(FREQS)
    logmag = np.log(np.abs(w) + 1e-9).reshape(-1, n)
    entries = np.repeat(mask, nf, axis=0)
    groups = [np.concatenate([np.arange(c * nf, (c + 1) * nf) for c in ch]) for ch in sensors]
    low, high = _observed_range(logmag, entries)
    logmag = _cross_modal_fill(logmag, entries, groups)
    logmag = np.clip(low_rank_complete(logmag, entries, rank), low, high)
    out = x.copy()
    damaged = np.flatnonzero(mask.any(1))
    if len(damaged):
        rows = (damaged[:, None] * nf + np.arange(nf)).ravel()
        phase, fade = _carry_phase(np.angle(w[damaged]).reshape(-1, n), entries[rows],
                                   np.tile(FREQS, len(damaged)))
        band = icwt((np.exp(logmag[rows]) * fade * np.cos(phase)).reshape(
            len(damaged), nf, n))
        baseline = x[damaged] - icwt(w[damaged])
        t = np.arange(n)
        for i, c in enumerate(damaged):
            keep = ~mask[c]
            slow = np.interp(t, t[keep], baseline[i, keep]) if keep.any() else np.zeros(n)
            out[c, mask[c]] = (band[i] + slow)[mask[c]]
    return Recovered(out.T, 2 * logmag.reshape(w.shape), mask, lags)


def _observed_range(logmag: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the range of observed log-magnitudes: estimates for masked entries stay
    inside it (a regression that extrapolates must not invent a burst). Rows never observed
    are not bounded."""
    low = np.where(mask, np.inf, logmag).min(1, keepdims=True)
    high = np.where(mask, -np.inf, logmag).max(1, keepdims=True)
    unseen = mask.all(1, keepdims=True)
    return np.where(unseen, -np.inf, low), np.where(unseen, np.inf, high)


def _bursts(w: np.ndarray, sensors: list[np.ndarray], z: float) -> np.ndarray:
    """(channels, samples) energy bursts: robust z of each sensor's log energy over time;
    a burst seen by two sensors at once is marked in every sensor."""
    flags = []
    for ch in sensors:
        energy = np.log((np.abs(w[ch]) ** 2).sum((0, 1)) + 1e-12)
        mad = np.median(np.abs(energy - np.median(energy))) + 1e-9
        flags.append((energy - np.median(energy)) / (1.4826 * mad) > z)
    flags = np.array(flags)
    common = flags.sum(0) >= 2
    out = np.zeros((w.shape[0], w.shape[-1]), bool)
    for i, ch in enumerate(sensors):
        out[ch] = flags[i] | common
    return out
