"""Stage 1: quality-aware synchronisation and recovery of one multi-sensor window.

Holes bridged by a line between their edges, then on a common 100-Hz grid, per channel: a
Morlet continuous wavelet transform (0.5-40 Hz, Torrence & Compo 1998; the window's ends
mirrored, so a level far from zero does not end in a step); each sensor's lag
against an anchor sensor from the 2-D cross-correlation of magnitude maps, as far as they rise
above their usual level (the smallest shift among near-maximal peaks, zero when no peak stands
out); a cross-modal artifact mask (missing samples, and energy bursts, made common when two
sensors burst together, as a bump in the road does); masked log-magnitudes first predicted from
the other sensors (ridge), then refined by iterative low-rank completion that rewrites masked
entries only, both on 0.1-s blocks; phases carried on at each scale's frequency; the inverse
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
# Log-magnitudes are recovered in blocks of 0.1 s: their envelopes are smooth, the tokens
# average 2-s steps of them, and ten times fewer columns make the cross-modal fit and the
# low-rank completion cheap enough for the live pipeline's latency budget.
POOL = 10


def scales(freqs: np.ndarray = FREQS) -> np.ndarray:
    return (W0 + np.sqrt(2 + W0 ** 2)) / (4 * np.pi * freqs)


@lru_cache(maxsize=8)
def _daughters(n: int, rate: float, freqs: tuple[float, ...]) -> tuple[int, np.ndarray]:
    """FFT length and the Morlet daughters' spectra (freqs, size), padded past the widest
    wavelet's reach so the circular convolution does not wrap. Values under 1e-12 of the peak
    are set to zero: they are below float32's resolution (the output changes by float32
    rounding at most), and as subnormal numbers they made the inverse FFT 2-3x slower."""
    s = scales(np.array(freqs))[:, None]
    size = fft.next_fast_len(n + int(2 * s.max() * rate))
    omega = 2 * np.pi * fft.fftfreq(size, 1 / rate)
    daughter = (np.pi ** -0.25 * np.sqrt(2 * np.pi * s * rate)
                * np.exp(-0.5 * (s * omega - W0) ** 2) * (omega > 0))
    daughter[daughter < 1e-12 * daughter.max()] = 0
    return size, daughter.astype(np.complex64)


def cwt(x: np.ndarray, rate: float = GRID_HZ, freqs: np.ndarray = FREQS) -> np.ndarray:
    """(channels, samples) -> (channels, freqs, samples) complex, unit-energy Morlet. The
    inverse FFT overwrites the product it is given (a temporary): without that, scipy copies
    it first, half the transform's time."""
    n = x.shape[-1]
    size, daughter = _daughters(n, float(rate), tuple(np.asarray(freqs, float)))
    spectrum = fft.fft(mirrored(x.astype(np.float32), size), axis=-1)
    return fft.ifft(spectrum[:, None, :] * daughter[None], axis=-1, overwrite_x=True)[..., :n]


def mirrored(x: np.ndarray, size: int) -> np.ndarray:
    """`x` (..., n) padded to `size` with its ends mirrored, the end's mirror after it and the
    start's before it (the FFT wraps around): the transform sees the signal go on at each end
    rather than a step to zero, whose energy would fill every scale there, most of all for a
    sensor with a level far from zero (a pupil, a skin conductance)."""
    n, pad = x.shape[-1], size - x.shape[-1]
    after = min(pad // 2, n)
    before = min(pad - after, n)
    rest = pad - after - before
    return np.concatenate([x, x[..., ::-1][..., :after],
                           np.zeros(x.shape[:-1] + (rest,), x.dtype),
                           x[..., :before][..., ::-1]], axis=-1)


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
    power: np.ndarray    # (channels, freqs, blocks of POOL samples) log |W|^2 after recovery
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


def unstair(x: np.ndarray) -> np.ndarray:
    """(samples, channels) each channel linearly interpolated between the samples where its
    value changes. An aligner that never waits reads a slow or chunked sensor as a
    staircase (a 32-Hz EDA sent 8 samples at a time moves every 250 ms); the steps' edges
    are not in the signal but fill its high bands. The last step is held: nothing later has
    arrived. Run it after `flat_runs`, which reads held values as missing."""
    out = x.copy()
    t = np.arange(len(x))
    for c in range(x.shape[1]):
        knots = np.flatnonzero(np.r_[True, np.diff(x[:, c]) != 0])
        if 1 < len(knots) < len(x):
            out[:, c] = np.interp(t, knots, x[knots, c])
    return out


def to_grid(x: np.ndarray, rate: float) -> np.ndarray:
    """(samples, channels) at `rate` -> the 100-Hz grid (polyphase, anti-aliased). The ends
    are extended by a line, not zeros: a level far from zero would otherwise fall toward
    zero over the window's first and last filter lengths."""
    up, down, taps = _resampler(float(rate))
    return signal.resample_poly(x, up, down, axis=0, window=taps, padtype="line")


@lru_cache(maxsize=8)
def _resampler(rate: float) -> tuple[int, int, np.ndarray]:
    """Up and down factors and resample_poly's own default filter (Kaiser, beta 5), designed
    once per rate rather than on every window."""
    f = Fraction(GRID_HZ / rate).limit_denominator(1000)
    most = max(f.numerator, f.denominator)
    return f.numerator, f.denominator, signal.firwin(20 * most + 1, 1 / most,
                                                     window=("kaiser", 5.0))


def transients(magnitude: np.ndarray, missing: np.ndarray, edge: int, z: float = 2.0,
               cap: float = 3.0, lowest_hz: float = 1.0) -> np.ndarray:
    """(maps, freqs, samples) magnitudes -> how far each scale's log-magnitude rises above
    its own robust level (median, MAD; z over `z`, clipped at `cap`), from `lowest_hz` up.
    Sensors of different kinds share events (a bump in the road), not rhythms: the whole maps
    of an EEG and an ECG do not correlate, their bursts do. Samples `missing` (maps, samples)
    and `edge` samples at each end (where the transform runs off the window) are zero."""
    log = np.log(magnitude[:, FREQS >= lowest_hz] + 1e-12)
    end = log.shape[-1] - edge
    inner = log[..., edge:end:4]  # every 4th sample: the level, not the events, at 1/4 the cost
    median = np.median(inner, -1, keepdims=True)
    mad = 1.4826 * np.median(np.abs(inner - median), -1, keepdims=True) + 1e-9
    out = np.clip((log - median) / mad - z, 0.0, cap)
    out *= ~missing[:, None]
    out[..., :edge] = out[..., end:] = 0.0
    return out


def estimate_lags(anchor: np.ndarray, others: np.ndarray, max_lag: int,
                  near: float = 0.9, floor: float = 0.3) -> list[int]:
    """Lag (samples) of each of `others` (maps, freqs, samples) behind `anchor` (freqs,
    samples), from their 2-D cross-correlation at zero frequency shift, normalised by both
    maps' energy: the smallest |lag| among the correlation's peaks (local maxima) within
    `near` of the highest; 0 when the highest is under `floor` (nothing to align on). The
    anchor is transformed once, and the sum over frequency taken before the inverse
    transform (it is linear)."""
    n = anchor.shape[-1]
    size = fft.next_fast_len(2 * n)
    cross = np.conj(fft.rfft(anchor, size)) * fft.rfft(others, size)
    energy = np.sqrt((anchor ** 2).sum() * (others ** 2).sum((1, 2))) + 1e-12
    corr = fft.irfft(cross.sum(1), size) / energy[:, None]
    lags = np.arange(-max_lag, max_lag + 1)
    out = []
    for c in corr:
        values = np.r_[c[-max_lag:], c[:max_lag + 1]]
        peaks = signal.find_peaks(values)[0]
        if not len(peaks) or values[peaks].max() < floor:
            out.append(0)
            continue
        near_best = lags[peaks[values[peaks] >= near * values[peaks].max()]]
        out.append(int(near_best[np.argmin(np.abs(near_best))]))
    return out


def low_rank_complete(matrix: np.ndarray, mask: np.ndarray, rank: int = 4,
                      iterations: int = 3) -> np.ndarray:
    """Iterative rank-`rank` SVD projection that rewrites only the masked entries; observed
    entries stay as they are. The SVD is taken on a randomized range of the matrix."""
    if not mask.any():
        return matrix
    filled = matrix.copy()
    probe = _probe(matrix.shape[1], rank + 4)
    for _ in range(iterations):
        mean = filled.mean(1, keepdims=True)
        centred = filled - mean
        # the top left singular vectors by a randomized range finder (Halko et al. 2011)
        basis, _ = np.linalg.qr(centred @ (centred.T @ (centred @ probe)))
        u, _, _ = np.linalg.svd(basis.T @ centred, full_matrices=False)
        top = basis @ u[:, :rank]
        filled = np.where(mask, top @ (top.T @ centred) + mean, matrix)
    return filled


def blocks(n: int) -> np.ndarray:
    """Where each block of POOL samples starts; the last block also takes the leftover."""
    return np.arange(0, max(n // POOL, 1) * POOL, POOL)


def pooled(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Means over the blocks starting at `starts`, along the last axis."""
    counts = np.diff(np.r_[starts, x.shape[-1]])
    return np.add.reduceat(x, starts, axis=-1) / counts


@lru_cache(maxsize=4)
def _probe(rows: int, columns: int) -> np.ndarray:
    """The range finder's fixed random test matrix (seeded: the same fill for the same
    window)."""
    probe = np.random.default_rng(0).standard_normal((rows, columns))
    probe.flags.writeable = False
    return probe


def _cross_modal_fill(logmag: np.ndarray, mask: np.ndarray, sensors: list[np.ndarray],
                      ridge: float = 1.0, least: int = 10) -> np.ndarray:
    """Masked log-magnitudes (channels, freqs, instants) of each sensor predicted from the other
    sensors' mean maps at the same instants, by ridge regression fitted where both are
    observed (at `least` instants); each channel keeps its own offset from its sensor's mean.
    `mask` (channels, instants) holds for every scale of a channel."""
    out = logmag.copy()
    n = logmag.shape[-1]
    maps = np.stack([logmag[ch].mean(0) for ch in sensors])
    seen = np.stack([~mask[ch].any(0) for ch in sensors])
    for i, ch in enumerate(sensors):
        target = mask[ch]
        hit = target.any(0)
        others = [j for j in range(len(sensors)) if j != i and seen[j][hit].all()]
        fit = seen[i] & seen[others].all(0) if others else seen[i]
        if not hit.any() or not others or fit.sum() < least:
            continue
        x = maps[others].reshape(-1, n).T
        y = maps[i].T
        xm, ym = x[fit].mean(0), y[fit].mean(0)
        xc = x[fit] - xm
        coef = np.linalg.solve(xc.T @ xc + ridge * fit.sum() * np.eye(x.shape[1]),
                               xc.T @ (y[fit] - ym))
        cols = np.flatnonzero(hit)
        pred = (x[cols] - xm) @ coef + ym
        observed = ~target[:, None]
        offset = (((logmag[ch] - maps[i]) * observed).sum(-1)
                  / np.maximum(observed.sum(-1), 1))
        for k, c in enumerate(ch):
            at = target[k, cols]
            out[c][:, cols[at]] = (pred[at] + offset[k]).T
    return out


def _carried_band(w: np.ndarray, logmag: np.ndarray, block: np.ndarray, mask: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band signal at each masked sample, as (channels, columns, values): the recovered
    magnitudes (`logmag` per block, `block` the block of each sample), with phases continued
    from the last observed sample at each scale's frequency and an amplitude that fades over
    one period (a coherent continuation near the edge of a gap, the mean, zero, deep inside
    it, where the true phase is unknowable), through the inverse transform. Every scale of a
    channel shares its mask, so only masked samples are computed."""
    t = np.arange(mask.shape[1])
    last = np.maximum.accumulate(np.where(mask, -1, t), axis=1)
    ch, col = np.nonzero(mask)
    prev = last[ch, col]
    since = (col - prev).astype(np.float32)[:, None]
    step = (2 * np.pi * FREQS / GRID_HZ).astype(np.float32)
    phase = np.angle(w[ch, :, np.where(prev >= 0, prev, col)])
    phase = np.where((prev >= 0)[:, None], phase + since * step, phase)
    fade = np.exp(-since * step / (2 * np.pi))
    amplitude = np.exp(logmag[ch, :, block[col]])
    return ch, col, icwt((amplitude * fade * np.cos(phase)).T)


def recover(window: np.ndarray, rate: float, sensors: list[np.ndarray], anchor: int = 1,
            max_lag_s: float = 0.6, burst_z: float = 4.0, rank: int = 4,
            missing: np.ndarray | None = None) -> Recovered:
    """Stage 1 on one window (samples x channels at `rate`); `sensors` lists each sensor's
    channel indices; `anchor` is the sensor others are aligned to; `missing` is
    `flat_runs(window, rate)` when the caller has it already."""
    missing = flat_runs(window, rate) if missing is None else missing
    holed = np.flatnonzero(missing.any(0))  # a channel without holes has none on the grid
    both = to_grid(np.hstack([bridged(window, missing), missing[:, holed]]), rate).T
    x = both[:window.shape[1]]
    mask = np.zeros(x.shape, bool)
    mask[holed] = both[window.shape[1]:] > 0.05
    n = x.shape[1]
    w = cwt(x)
    mag = np.abs(w)
    edge = int(max_lag_s * GRID_HZ)
    maps = transients(np.stack([mag[ch].mean(0) for ch in sensors]),
                      np.stack([mask[ch].any(0) for ch in sensors]), edge)
    lags = np.zeros(len(sensors))
    others = [i for i in range(len(sensors)) if i != anchor]
    for i, lag in zip(others, estimate_lags(maps[anchor], maps[others], edge)):
        if lag:
            ch = sensors[i]
            for a in (w, mag, x, mask):
                a[ch] = np.roll(a[ch], -lag, axis=-1)
            mask[ch, slice(n - lag, n) if lag > 0 else slice(0, -lag)] = True
            lags[i] = lag / GRID_HZ
    mask |= _bursts(mag, sensors, burst_z)
    starts = blocks(n)
    block = np.minimum(np.arange(n) // POOL, len(starts) - 1)
    holes = pooled(mask, starts) > 0
    logmag = _cross_modal_fill(pooled(np.log(mag + 1e-9), starts), holes, sensors)
    flat = logmag.reshape(-1, len(starts))
    rows = np.repeat(holes, len(FREQS), axis=0)
    low, high = _observed_range(flat, rows)
    logmag = np.clip(low_rank_complete(flat, rows, rank), low, high).reshape(logmag.shape)
    out = x.copy()
    damaged = np.flatnonzero(mask.any(1))
    if len(damaged):
        ch, col, band = _carried_band(w, logmag, block, mask)
        slow = np.zeros_like(x)
        slow[damaged] = bridged((x[damaged] - icwt(w[damaged])).T, mask[damaged].T).T
        out[ch, col] = band + slow[ch, col]
    return Recovered(out.T, 2 * logmag, mask, lags)


def bridged(window: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """(samples, channels) with each hole bridged by a straight line between its edges (zero
    where a channel has nothing: stage 2 then reads an absence, not a stale level): before
    the transform, so that it sees no step at a hole's edges, whose energy would leak into
    the band near them and into the slow baseline; and for that slow baseline (below the
    band) inside the holes."""
    out = window.copy()
    t = np.arange(len(window))
    for c in np.flatnonzero(missing.any(0)):
        keep = ~missing[:, c]
        out[:, c] = np.interp(t, t[keep], window[keep, c]) if keep.any() else 0.0
    return out


def _observed_range(logmag: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the range of observed log-magnitudes: estimates for masked entries stay
    inside it (a regression that extrapolates must not invent a burst). Rows never observed
    are not bounded."""
    low = np.where(mask, np.inf, logmag).min(1, keepdims=True)
    high = np.where(mask, -np.inf, logmag).max(1, keepdims=True)
    unseen = mask.all(1, keepdims=True)
    return np.where(unseen, -np.inf, low), np.where(unseen, np.inf, high)


def _bursts(mag: np.ndarray, sensors: list[np.ndarray], z: float) -> np.ndarray:
    """(channels, samples) energy bursts from |W| (channels, freqs, samples): robust z of each
    sensor's log energy over time; a burst seen by two sensors at once is marked in every
    sensor."""
    energy = (mag ** 2).sum(1)
    log = np.log(np.stack([energy[ch].sum(0) for ch in sensors]) + 1e-12)
    deviation = log - np.median(log, 1, keepdims=True)
    mad = np.median(np.abs(deviation), 1, keepdims=True) + 1e-9
    flags = deviation / (1.4826 * mad) > z
    common = flags.sum(0) >= 2
    out = np.zeros((mag.shape[0], mag.shape[2]), bool)
    for i, ch in enumerate(sensors):
        out[ch] = flags[i] | common
    return out
