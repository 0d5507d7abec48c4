"""Motor-imagery sessions of synthetic users written in real formats: an XDF as `edgert record`
or LabRecorder writes it (EEG + free-text cue markers) and a PhysioNet EEGMMIDB EDF+ run."""
from pathlib import Path

import numpy as np
from edfio import Edf, EdfAnnotation, EdfSignal

from edgert.methods.btta_dg import synth
from edgert.streams import Chunk, StreamInfo
from edgert.streams.xdf_write import XdfWriter

CUES = {"left_hand": "cue-left", "right_hand": "cue-right", "feet": "cue-feet",
        "tongue": "cue-tongue"}


def session(user: int, index: int, trials: int, seed: int = 0):
    """Continuous EEG (samples x channels, uV) and (cue sample, class) of one session."""
    subject = synth.make_subject(user)
    return synth.continuous(subject, synth.make_session(subject, index), trials, seed)


def write_xdf(path: Path, user: int, index: int, trials: int, start: float = 1000.0,
              channels: tuple[str, ...] = synth.CHANNELS, name: str = "amp",
              cues: dict[str, str] = CUES) -> Path:
    """One session as an XDF: EEG stream `name` and marker stream `name-cues` (`cues` maps
    each class to its marker text)."""
    data, onsets = session(user, index, trials)
    pick = [synth.CHANNELS.index(c) for c in channels]
    eeg = StreamInfo(name=name, type="EEG", channels=channels, units=("uV",) * len(channels),
                     rate=synth.RATE)
    marks = StreamInfo(name=f"{name}-cues", type="Markers", channels=("cue",), rate=0.0,
                       dtype="string")
    values = np.array([[cues[synth.LABELS[y]]] for _, y in onsets], dtype=object)
    with XdfWriter(path) as writer:
        a, b = writer.add_stream(eeg), writer.add_stream(marks)
        writer.write(a, Chunk(data[:, pick].astype(np.float32),
                              start + np.arange(len(data)) / synth.RATE, eeg))
        writer.write(b, Chunk(values, start + np.array([c for c, _ in onsets]) / synth.RATE,
                              marks))
    return path


def write_physionet(path: Path, user: int, index: int, trials: int) -> Path:
    """One session as a PhysioNet imagery run (left/right fist as T1/T2, 160 Hz resampled
    from the simulator's 250 Hz, channel names padded with dots as the release pads them)."""
    from scipy import signal

    data, cues = session(user, index, trials)
    keep = [(c, y) for c, y in cues if y in (0, 1)]
    x = signal.resample_poly(data, 16, 25, axis=0)
    seconds = len(x) // 160
    signals = [EdfSignal(x[:seconds * 160, i].astype(float), sampling_frequency=160,
                         label=f"{name}..", physical_dimension="uV",
                         physical_range=(-2000, 2000))
               for i, name in enumerate(synth.CHANNELS)]
    ann = [EdfAnnotation(c / synth.RATE, 4.0, f"T{y + 1}") for c, y in keep
           if c / synth.RATE + 4 < seconds]
    Edf(signals, annotations=ann).write(path)
    return path
