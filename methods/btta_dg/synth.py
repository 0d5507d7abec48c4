"""Seeded synthetic motor-imagery EEG with the shifts that break a decoder between users.

22 channels of the BCI Competition IV 2a montage at 250 Hz, 4-s trials, 4 classes. Three
motor sources (left and right hand areas, foot area) carry mu (8-13 Hz) and beta (13-30 Hz)
rhythms; imagining a movement desynchronises them (ERD) over the matching area from a
variable onset; tongue imagery desynchronises both hand areas weakly and synchronises the foot
area. The background is 1/f noise plus an occipital alpha source that waxes and wanes at
random (a distractor in the mu band).

Between subjects: mu and beta peak frequencies, the sources' positions and spread (mixing),
channel gains and SNR change. Between sessions of one subject: channel gains drift, the
mixing rotates slightly (covariance rotation) and some electrodes get noisier.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, signal

CHANNELS = ("Fz", "FC3", "FC1", "FCz", "FC2", "FC4", "C5", "C3", "C1", "Cz", "C2", "C4", "C6",
            "CP3", "CP1", "CPz", "CP2", "CP4", "P1", "Pz", "P2", "POz")
POSITIONS = np.array([(0, 2), (-2, 1), (-1, 1), (0, 1), (1, 1), (2, 1), (-3, 0), (-2, 0),
                      (-1, 0), (0, 0), (1, 0), (2, 0), (3, 0), (-2, -1), (-1, -1), (0, -1),
                      (1, -1), (2, -1), (-1, -2), (0, -2), (1, -2), (0, -3)], float)
LABELS = ("left_hand", "right_hand", "feet", "tongue")
RATE = 250.0
TRIAL_S = 4.0
SOURCES = {"left_area": (2.0, 0.0), "right_area": (-2.0, 0.0), "foot_area": (0.0, 0.0),
           "occipital": (0.0, -3.5)}
# ERD depth (fraction of rhythm kept) of each motor source per class; > 1 is ERS.
ERD = {"left_hand": (0.3, 0.9, 1.0), "right_hand": (0.9, 0.3, 1.0),
       "feet": (1.0, 1.0, 0.3), "tongue": (0.65, 0.65, 1.4)}


@dataclass(frozen=True)
class Subject:
    """What makes one user's EEG differ from another's."""

    seed: int
    mu_hz: float
    beta_hz: float
    mixing: np.ndarray  # channels x sources
    gains: np.ndarray   # per channel
    snr: float          # rhythm amplitude over background


@dataclass(frozen=True)
class Session:
    """What changes between two days of the same user."""

    gains: np.ndarray
    rotation: np.ndarray  # channels x channels, near identity
    noisy: np.ndarray     # extra white-noise std per channel (uV)


def make_subject(seed: int, shift: float = 1.0) -> Subject:
    """A subject; `shift` scales how far it lies from the population average."""
    rng = np.random.default_rng([seed, 1])
    mu = 10.5 + shift * rng.uniform(-2.0, 2.0)
    beta = 21.0 + shift * rng.uniform(-4.0, 4.0)
    columns = []
    for x, y in SOURCES.values():
        centre = np.array([x, y]) + shift * rng.normal(0, 0.45, 2)
        spread = 1.0 * np.exp(shift * rng.normal(0, 0.2))
        columns.append(np.exp(-((POSITIONS - centre) ** 2).sum(1) / (2 * spread ** 2)))
    gains = np.exp(shift * rng.normal(0, 0.25, len(CHANNELS)))
    snr = 1.0 * np.exp(shift * rng.normal(0, 0.2))
    return Subject(seed, mu, beta, np.array(columns).T, gains, snr)


def make_session(subject: Subject, session: int, shift: float = 1.0) -> Session:
    """Session 0 is the subject as is; later sessions drift by `shift`."""
    rng = np.random.default_rng([subject.seed, 2, session])
    n = len(CHANNELS)
    if session == 0:
        return Session(np.ones(n), np.eye(n), np.zeros(n))
    skew = rng.normal(0, 0.08 * shift, (n, n))
    noisy = np.where(rng.random(n) < 0.15, rng.uniform(1.0, 3.0, n) * shift, 0.0)
    return Session(np.exp(rng.normal(0, 0.2 * shift, n)), linalg.expm(skew - skew.T), noisy)


def true_bands(subject: Subject) -> dict[str, tuple[float, float]]:
    """The generator's mu and beta bands for `subject` (Hz), for comparing learned filters."""
    return {"mu": (subject.mu_hz - 2.0, subject.mu_hz + 2.0),
            "beta": (subject.beta_hz - 3.0, subject.beta_hz + 3.0)}


def _rhythm(rng: np.random.Generator, n: int, centre: float, width: float) -> np.ndarray:
    """A narrow-band oscillation: white noise band-passed around `centre`, unit std."""
    sos = signal.butter(2, [centre - width, centre + width], "bandpass", fs=RATE, output="sos")
    x = signal.sosfilt(sos, rng.standard_normal(n + 250))[250:]
    return x / x.std()


def _envelope(n: int, onset: float, depth: float) -> np.ndarray:
    """1 before `onset` (s), then a smooth 0.3-s ramp to `depth` for the rest of the trial."""
    t = np.arange(n) / RATE
    ramp = np.clip((t - onset) / 0.3, 0.0, 1.0)
    return 1.0 + (depth - 1.0) * ramp


def trial(rng: np.random.Generator, label: int, subject: Subject, session: Session,
          seconds: float = TRIAL_S) -> np.ndarray:
    """One trial (samples x channels, uV) starting at the cue; label -1 is rest."""
    n = int(seconds * RATE)
    onset = rng.uniform(0.3, 1.0)
    motor = []
    for depth in ERD[LABELS[label]] if label >= 0 else (1.0, 1.0, 1.0):
        mu = _rhythm(rng, n, subject.mu_hz, 1.5)
        beta = 0.6 * _rhythm(rng, n, subject.beta_hz, 2.5)
        motor.append((mu + beta) * _envelope(n, onset, depth))
    alpha = _rhythm(rng, n, 10.0, 1.5) * (1 + 0.8 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4)
                                                           * np.arange(n) / RATE + rng.uniform(0, 6.3)))
    sources = np.stack(motor + [alpha], 1) * np.array([1, 1, 1, 1.2]) * 4.5 * subject.snr
    pink = signal.lfilter([1.0], [1.0, -0.97], rng.standard_normal((n, len(CHANNELS))), axis=0)
    common = signal.lfilter([1.0], [1.0, -0.97], rng.standard_normal((n, 1)), axis=0)
    eeg = sources @ subject.mixing.T + 1.5 * pink + 1.0 * common
    eeg = eeg @ session.rotation.T
    eeg = eeg * (subject.gains * session.gains) + session.noisy * rng.standard_normal(eeg.shape)
    return eeg.astype(np.float32)


def trials(subject: Subject, session: Session, count: int, seed: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """`count` trials (trials x channels x samples, uV) with balanced shuffled labels."""
    rng = np.random.default_rng([subject.seed, 3, seed])
    labels = rng.permutation(np.arange(count) % len(LABELS))
    data = np.stack([trial(rng, int(y), subject, session).T for y in labels])
    return data, labels


def continuous(subject: Subject, session: Session, count: int, seed: int, rest_s: float = 1.5
               ) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """A recording as an amplifier streams it: `count` trials separated by `rest_s` of rest
    (samples x channels), and the (cue sample, label) of each trial."""
    data, labels = trials(subject, session, count, seed)
    rng = np.random.default_rng([subject.seed, 4, seed])
    rest = int(rest_s * RATE)
    parts, cues, at = [], [], 0
    for x, y in zip(data, labels):
        parts += [trial(rng, -1, subject, session, rest_s), x.T]
        at += rest
        cues.append((at, int(y)))
        at += x.shape[1]
    return np.concatenate(parts), cues
