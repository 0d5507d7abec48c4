"""A visual-evoked EEG simulator: what a viewer's occipito-parietal EEG does when shown an image.

Each image evokes P1 (about 100 ms), N1 (170 ms), P2 (250 ms) and a late component (400 ms).
Their amplitudes per cortical source are a fixed random mixing of the image's attributes (P1
mostly colour, position and size; N1 and P2 shape and texture), their latencies shift with size
and texture, and sources project to the scalp through a subject's own topographies. On top:
1/f background, alpha bursts, eye blinks, and trial-to-trial amplitude and latency jitter;
subjects differ in mixing and SNR. Images are shown as in THINGS-EEG: each one repeated,
in a shuffled stream, one onset every SOA_S.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal

from edgert.methods.avde.images import ATTRIBUTES, CONCEPTS

RATE = 200.0
EPOCH_S = 1.0  # one LaBraM patch per channel
CHANNELS = ("Pz", "P3", "P7", "O1", "Oz", "O2", "P4", "P8", "P1", "P5", "PO7", "PO3", "POz",
            "PO4", "PO8", "P6", "P2")  # the 17 channels of THINGS-EEG2
SOA_S = (1.1, 1.4)
BANDPASS_HZ = (1.0, 40.0)  # what pipelines/eeg2image.yaml applies before the encoder
ORDER = 2
SOURCES = 6
# (latency s, width s, sign, which attributes drive it)
COMPONENTS = ((0.10, 0.025, 1.0, ("colour", "position", "size")),
              (0.17, 0.03, -1.0, ("shape", "position", "texture")),
              (0.25, 0.04, 1.0, ("shape", "texture", "colour")),
              (0.40, 0.08, 1.0, tuple(ATTRIBUTES)))
_SIZES = [len(v) for v in ATTRIBUTES.values()]
_OFFSETS = np.cumsum([0] + _SIZES)


def one_hot(concept: int) -> np.ndarray:
    """The concept's attributes as concatenated one-hot codes."""
    code = np.zeros(_OFFSETS[-1])
    code[_OFFSETS[:-1] + np.array(CONCEPTS[concept])] = 1.0
    return code


def _driven_by(names: tuple[str, ...]) -> np.ndarray:
    keep = np.zeros(_OFFSETS[-1])
    for k, name in enumerate(ATTRIBUTES):
        if name in names:
            keep[_OFFSETS[k]:_OFFSETS[k + 1]] = 1.0
    return keep


@dataclass
class Subject:
    mixing: np.ndarray  # (components, sources, attribute codes) uV
    topography: np.ndarray  # (channels, sources)
    noise_uv: float
    seed: int


def make_subject(seed: int) -> Subject:
    """Mixing shared across subjects (the brain's code) plus a subject's own part; a
    subject's own topographies and noise level."""
    shared, own = np.random.default_rng(1234), np.random.default_rng(seed)
    base = shared.normal(size=(len(COMPONENTS), SOURCES, _OFFSETS[-1]))
    mixing = 0.8 * base + 0.45 * own.normal(size=base.shape)
    for c, (_, _, _, names) in enumerate(COMPONENTS):
        mixing[c] *= _driven_by(names) * 2.5
    topo = np.abs(shared.normal(size=(len(CHANNELS), SOURCES))) + 0.4 * own.normal(
        size=(len(CHANNELS), SOURCES))
    return Subject(mixing, topo / np.linalg.norm(topo, axis=0), float(own.uniform(6, 10)), seed)


def evoked(subject: Subject, concept: int, rng: np.random.Generator) -> np.ndarray:
    """One trial's evoked response (channels, EPOCH_S * RATE) uV."""
    t = np.arange(int(EPOCH_S * RATE)) / RATE
    code = one_hot(concept)
    attrs = dict(zip(ATTRIBUTES, CONCEPTS[concept]))
    shift = 0.012 * (attrs["size"] == 0) + 0.015 * attrs["texture"]  # small, striped: later
    sources = np.zeros((SOURCES, len(t)))
    for (latency, width, sign, _), mix in zip(COMPONENTS, subject.mixing):
        when = latency + shift + rng.normal(0, 0.008)
        bump = np.exp(-0.5 * ((t - when) / width) ** 2)
        sources += sign * (mix @ code)[:, None] * rng.normal(1, 0.2) * bump
    return subject.topography @ sources


def background(subject: Subject, samples: int, rng: np.random.Generator) -> np.ndarray:
    """(samples, channels) uV of 1/f noise, alpha bursts and blinks."""
    n = len(CHANNELS)
    spectrum = np.fft.rfft(rng.normal(size=(n, samples)))
    freqs = np.fft.rfftfreq(samples, 1 / RATE)
    pink = np.fft.irfft(spectrum / np.sqrt(np.maximum(freqs, 0.5)), samples)
    pink *= subject.noise_uv / pink.std()
    t = np.arange(samples) / RATE
    envelope = np.convolve(rng.random(samples) < 0.002, np.hanning(int(RATE)), "same")
    alpha = np.sin(2 * np.pi * rng.uniform(9, 11) * t) * np.minimum(envelope, 1) * 12.0
    weights = np.linspace(1.0, 0.4, n)
    blinks = np.zeros(samples)
    for start in np.flatnonzero(rng.random(samples) < 0.15 / RATE):
        width = int(0.3 * RATE)
        blinks[start:start + width] += 60 * np.hanning(width)[:samples - start]
    return (pink + alpha[None] * weights[:, None] + 0.1 * blinks[None]).T


def session(subject: Subject, concepts: np.ndarray, seed: int = 0
            ) -> tuple[np.ndarray, np.ndarray]:
    """A continuous recording of `concepts` shown in that order: (samples, channels) uV and
    each onset's sample index."""
    rng = np.random.default_rng((subject.seed, seed))
    gaps = rng.uniform(*SOA_S, size=len(concepts))
    onsets = (np.concatenate([[0.5], 0.5 + np.cumsum(gaps[:-1])]) * RATE).astype(int)
    length = int(EPOCH_S * RATE)
    data = background(subject, int(onsets[-1] + length + RATE), rng)
    for onset, concept in zip(onsets, concepts):
        data[onset:onset + length] += evoked(subject, int(concept), rng).T
    return data.astype(np.float32), onsets


def filtered(data: np.ndarray, rate: float = RATE) -> np.ndarray:
    """The pipeline's causal band-pass, settled on the first sample: (samples, channels)."""
    sos = signal.butter(ORDER, BANDPASS_HZ, btype="bandpass", fs=rate, output="sos")
    zi = signal.sosfilt_zi(sos)[:, :, None] * data[:1][None]
    return signal.sosfilt(sos, data, axis=0, zi=zi)[0].astype(np.float32)


def epochs(data: np.ndarray, onsets: np.ndarray, rate: float = RATE) -> np.ndarray:
    """(trials, channels, EPOCH_S * rate) cut at each onset from the filtered recording."""
    x = filtered(data, rate)
    n = int(EPOCH_S * rate)
    return np.stack([x[o:o + n].T for o in onsets]).astype(np.float32)


def trials(subject: Subject, concepts: np.ndarray, repetitions: int, seed: int = 0
           ) -> tuple[np.ndarray, np.ndarray]:
    """Each concept shown `repetitions` times in a shuffled stream: trials (n, channels,
    samples) as the live pipeline cuts them, and the concept of each."""
    rng = np.random.default_rng((subject.seed, seed, 1))
    order = rng.permutation(np.repeat(np.asarray(concepts), repetitions))
    data, onsets = session(subject, order, seed)
    return epochs(data, onsets), order
