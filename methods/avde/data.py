"""What AVDE reads: viewing data (simulated, or THINGS-EEG2 in its published layout) and the
unlabelled EEG its encoder is pretrained on.

A `Viewing` holds 1-s trials at 200 Hz after each image onset, the image each trial showed,
and the images. THINGS-EEG2 ships `preprocessed_eeg_training.npy` / `_test.npy` per subject
(a pickled dict: `preprocessed_eeg_data` images x repetitions x channels x time, `ch_names`,
`times`) and the images as `training_images/` and `test_images/` folders of concept folders.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import signal

from edgert.methods.avde import images as image_set
from edgert.methods.avde import simulate
from edgert.methods.avde.model import PATCH
from edgert.runtime.plugin import Data, DataError
from edgert.methods.cache import recordings_folder
from edgert.methods.unpickle import ArraysOnly

RATE = simulate.RATE
THINGS_FILES = ("preprocessed_eeg_training.npy", "preprocessed_eeg_test.npy")
THINGS_KEYS = ("preprocessed_eeg_data", "ch_names", "times")


@dataclass
class Viewing:
    """Trials (n, channels, PATCH) uV after the onset of image `shown[i]` of `images`
    (m, 3, 32, 32), named (captioned) by `names`; `test` marks the trials of held-out images;
    `concepts` (m,) the simulator's concept of each image (None for real data)."""

    eeg: np.ndarray
    shown: np.ndarray
    test: np.ndarray
    images: np.ndarray
    names: list[str]
    channels: tuple[str, ...]
    concepts: np.ndarray | None = None
    source: str = "simulated"

    def split(self, test: bool) -> tuple[np.ndarray, np.ndarray]:
        keep = self.test == test
        return self.eeg[keep], self.shown[keep]


def simulated(subject: int, per_concept: int, repetitions: int, test_repetitions: int,
              seed: int = 0) -> Viewing:
    """A simulated viewer: training concepts `repetitions` times each (one jittered image of
    `per_concept` each time), held-out concepts' canonical images `test_repetitions` times."""
    train_c, test_c = image_set.training_concepts(), image_set.held_out()
    train = image_set.image_set(train_c, per_concept, seed)
    test = image_set.image_set(test_c, 1, seed)
    images = np.concatenate([train.images, test.images])
    concepts = np.concatenate([train.concepts, test.concepts])
    person = simulate.make_subject(subject)
    rng = np.random.default_rng((subject, seed))
    shown_train = rng.permutation(np.repeat(np.arange(len(train_c) * per_concept),
                                            repetitions))
    shown_test = len(train.concepts) + np.repeat(np.arange(len(test_c)), test_repetitions)
    shown = np.concatenate([shown_train, rng.permutation(shown_test)])
    eeg = _viewed(person, concepts[shown], seed)
    return Viewing(eeg, shown, np.arange(len(shown)) >= len(shown_train), images,
                   [image_set.describe(int(c)) for c in concepts], simulate.CHANNELS, concepts)


def _viewed(person: simulate.Subject, concepts: np.ndarray, seed: int) -> np.ndarray:
    """Trials of a stream of images, cut in blocks of a few hundred (a session each)."""
    parts = [simulate.epochs(*simulate.session(person, block, seed + k))
             for k, block in enumerate(np.array_split(concepts, max(1, len(concepts) // 400)))]
    return np.concatenate(parts)


def read_things(folder: Path, size: int = image_set.SIZE) -> Viewing:
    """One THINGS-EEG2 subject folder (both .npy files) and its images, found in the folder
    or the two above it (as `image_set/training_images` or `training_images`)."""
    folder = Path(folder)
    parts = [_things_array(folder / name) for name in THINGS_FILES]
    channels = tuple(parts[0]["ch_names"])
    if tuple(parts[1]["ch_names"]) != channels:
        raise DataError(f"{folder}: the training and test files have different ch_names")
    train_images, train_names = _image_folder(folder, "training_images", size)
    test_images, test_names = _image_folder(folder, "test_images", size)
    eegs, shown, test = [], [], []
    for k, (part, count, offset) in enumerate(((parts[0], len(train_images), 0),
                                               (parts[1], len(test_images), len(train_images)))):
        data = part["preprocessed_eeg_data"]
        if data.shape[0] != count:
            raise DataError(f"{folder / THINGS_FILES[k]}: {data.shape[0]} images of EEG, but "
                            f"the image folder has {count}")
        trials = to_patch(data.reshape(-1, *data.shape[2:]), np.asarray(part["times"]),
                          folder / THINGS_FILES[k])
        eegs.append(trials)
        shown.append(offset + np.repeat(np.arange(data.shape[0]), data.shape[1]))
        test.append(np.full(len(trials), bool(k)))
    return Viewing(np.concatenate(eegs), np.concatenate(shown), np.concatenate(test),
                   np.concatenate([train_images, test_images]), train_names + test_names,
                   channels, None, str(folder))


def _load_npy(path: Path):
    """An .npy file; an object array through `ArraysOnly`."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read_header(f)
        if not dtype.hasobject:
            f.seek(0)
            return np.lib.format.read_array(f)
        value = ArraysOnly(f).load()
    return value.item() if isinstance(value, np.ndarray) and value.shape == () else value


def _things_array(path: Path) -> dict:
    if not path.exists():
        raise DataError(f"{path}: missing; a THINGS-EEG2 subject folder holds {THINGS_FILES}")
    try:
        value = _load_npy(path)
    except (ValueError, OSError, EOFError, pickle.UnpicklingError) as e:
        raise DataError(f"{path}: not a THINGS-EEG2 .npy file ({e})") from None
    if not isinstance(value, dict) or any(k not in value for k in THINGS_KEYS):
        raise DataError(f"{path}: expected a dict with {THINGS_KEYS} (the published "
                        "preprocessed layout)")
    data = np.asarray(value["preprocessed_eeg_data"])
    if data.ndim != 4 or data.shape[2] != len(value["ch_names"]) or \
            data.shape[3] != len(value["times"]):
        raise DataError(f"{path}: field 'preprocessed_eeg_data' has shape {data.shape}; "
                        "expected images x repetitions x len(ch_names) x len(times)")
    return value


def to_patch(trials: np.ndarray, times: np.ndarray, where: Path | str) -> np.ndarray:
    """(n, channels, time) epochs -> (n, channels, PATCH): resampled to 200 Hz, from the onset
    (time 0) for 1 s, zero-padded if the epoch ends earlier. Volts become microvolts."""
    if len(times) < 2:
        raise DataError(f"{where}: field 'times' needs at least two samples")
    rate = 1.0 / float(np.median(np.diff(times)))
    x = np.asarray(trials, np.float64)[..., times >= -1e-9]
    if np.nanmax(np.abs(x)) < 1e-2:  # volts
        x = x * 1e6
    if abs(rate - RATE) > 1e-6:
        f = Fraction(RATE / rate).limit_denominator(1000)
        x = signal.resample_poly(x, f.numerator, f.denominator, axis=-1)
    out = np.zeros(x.shape[:2] + (PATCH,), np.float32)
    n = min(PATCH, x.shape[-1])
    out[..., :n] = x[..., :n]
    return out


def _image_folder(folder: Path, name: str, size: int) -> tuple[np.ndarray, list[str]]:
    """The images of a THINGS image folder (concept folders, e.g. `00001_aardvark/`, in
    order) at `size` pixels, and each one's concept name."""
    from PIL import Image

    places = [p / sub / name for p in (folder, folder.parent, folder.parent.parent)
              for sub in ("", "image_set")]
    found = next((p for p in places if p.is_dir()), None)
    if found is None:
        raise DataError(f"{folder}: no {name}/ folder of images here, in image_set/ or in the "
                        "two folders above; put THINGS' image_set beside the EEG")
    paths = sorted(f for d in sorted(found.iterdir()) if d.is_dir() for f in sorted(d.iterdir())
                   if f.suffix.lower() in (".jpg", ".jpeg", ".png"))
    if not paths:
        raise DataError(f"{found}: no .jpg or .png images in its concept folders")
    images = np.stack([np.asarray(Image.open(p).convert("RGB").resize((size, size)),
                                  np.float32).transpose(2, 0, 1) / 255.0 for p in paths])
    return images, [p.parent.name.partition("_")[2].replace("_", " ") or p.parent.name
                    for p in paths]


def read(data: Data) -> Viewing:
    """`--data FOLDER [--format things_eeg2]`: one THINGS-EEG2 subject."""
    if data.format not in (None, "things_eeg2"):
        raise DataError(f"--format {data.format!r} is not one AVDE reads: ['things_eeg2']")
    if len(data.paths) != 1 or not Path(data.paths[0]).is_dir():
        raise DataError(f"give one THINGS-EEG2 subject folder holding {THINGS_FILES}; got "
                        f"{[str(p) for p in data.paths]}")
    return read_things(Path(data.paths[0]))


def pretraining_corpus(windows_s: int = 4) -> tuple[list[tuple[np.ndarray, tuple[str, ...]]], dict]:
    """The shared real recordings' EEG (motor imagery, P300, SSVEP) at 200 Hz in windows of
    `windows_s` patches, each with its channel names; and the seconds per file."""
    from edgert.streams.xdf_read import read_xdf

    root = recordings_folder()
    paths = sorted((root / "eeg_mi").glob("*.xdf")) + [root / "xdf" / "bciess_p300_gusbamp.xdf",
                                                        root / "xdf" / "bciess_ssvep_dsi7.xdf"]
    out, seconds = [], {}
    for path in paths:
        if not path.exists():
            continue
        eeg = next(r for r in read_xdf(path) if r.info.type.upper() == "EEG")
        x = resample(np.asarray(eeg.data, np.float64), eeg.info.rate)
        x = simulate.filtered(x - x.mean(0), RATE)
        n = len(x) // (windows_s * PATCH)
        windows = x[:n * windows_s * PATCH].T.reshape(x.shape[1], n, -1).transpose(1, 0, 2)
        out.append((windows.astype(np.float32), eeg.info.channels))
        seconds[path.name] = round(n * windows_s, 1)
    return out, seconds


def resample(x: np.ndarray, rate: float) -> np.ndarray:
    """(samples, channels) to 200 Hz."""
    if abs(rate - RATE) < 1e-6:
        return x
    f = Fraction(RATE / rate).limit_denominator(1000)
    return signal.resample_poly(x, f.numerator, f.denominator, axis=0)


def ssvep_trials() -> tuple[np.ndarray, np.ndarray, tuple[str, ...], tuple[float, ...]] | None:
    """The shared SSVEP recording's 1-s trials after each stimulus marker
    (`1.4,LABEL,F0,F1,F2`) at 200 Hz, their attended target (an index into the flicker
    frequencies F0..F2), the channels, and the frequencies; None if the file is absent. A
    channel that never changes (the DSI-7's trigger channel, TRG) is left out."""
    from edgert.streams.xdf_read import read_xdf

    path = recordings_folder() / "xdf" / "bciess_ssvep_dsi7.xdf"
    if not path.exists():
        return None
    streams = read_xdf(path)
    eeg = next(r for r in streams if r.info.type.upper() == "EEG")
    markers = next(r for r in streams if r.info.dtype == "string")
    raw = np.asarray(eeg.data, np.float64)
    live = raw.std(0) > 0
    x = simulate.filtered(resample(raw[:, live], eeg.info.rate), RATE)
    stamps = eeg.timestamps[0] + np.arange(len(x)) / RATE
    trials, labels, frequencies = [], [], ()
    for t, (value,) in zip(markers.timestamps, markers.data):
        fields = str(value).split(",")
        start = int(np.searchsorted(stamps, t))
        if len(fields) >= 3 and start + PATCH <= len(x):
            trials.append(x[start:start + PATCH].T)
            labels.append(int(fields[1]))
            frequencies = tuple(float(f) for f in fields[2:])
    channels = tuple(c for c, keep in zip(eeg.info.channels, live) if keep)
    return np.stack(trials).astype(np.float32), np.array(labels), channels, frequencies
