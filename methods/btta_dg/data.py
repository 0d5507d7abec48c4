"""Motor-imagery recordings in their own formats -> continuous EEG plus cue events.

- bci-essentials MI XDF (LabRecorder; markers `switch,<n_classes>,<label>,<window_s>`), as in
  the shared real recordings.
- BCI Competition IV 2a GDF (cues 769-772: left hand, right hand, feet, tongue), via MNE.
- PhysioNet EEG Motor Movement/Imagery EDF+ (annotations T0 rest, T1, T2), via MNE.
- Any XDF with an EEG stream and a string marker stream (`edgert record`, LabRecorder): the
  user says which marker is which class (`labels`, `--labels left=cue-left`).

Each loader returns a `Continuous`: what the live pipeline would see, so offline training and
the live path epoch the same way (`epochs`). `load` reads a user's files by format and
`harmonise` brings them to one channel set and rate, as a bundle's manifest records them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import signal

from edgert.runtime.plugin import Data, DataError
from edgert.runtime.nodes.score import cue_class
from edgert.streams.xdf_read import read_xdf


@dataclass
class Continuous:
    data: np.ndarray            # samples x channels, uV
    rate: float
    channels: tuple[str, ...]
    events: np.ndarray          # (cue sample, class index) rows
    labels: tuple[str, ...]
    window_s: float             # seconds of imagery after each cue
    cues: dict[str, str] | None = None      # class -> cue marker (or re:PATTERN), if LSL
    cue_stream: tuple[str, str] | None = None  # (name, type) of the cue marker stream
    eeg_stream: tuple[str, str] | None = None  # (name, type) of the EEG stream

    def filtered(self, low: float = 4.0, high: float = 40.0, order: int = 4) -> "Continuous":
        """Causal Butterworth band-pass started at the first sample's level, as the live
        pipeline's filter node applies it."""
        sos = signal.butter(order, [low, high], "bandpass", fs=self.rate, output="sos")
        zi = signal.sosfilt_zi(sos)[:, :, None] * self.data[:1].astype(float)
        data = signal.sosfilt(sos, self.data, axis=0, zi=zi)[0].astype(np.float32)
        return replace(self, data=data)

    def epochs(self, start: float, stop: float) -> tuple[np.ndarray, np.ndarray]:
        """(trials, channels, samples) from `start` to `stop` s after each cue, and labels;
        cues too close to the end are left out."""
        a, b = int(round(start * self.rate)), int(round(stop * self.rate))
        keep = [(s, y) for s, y in self.events if s + a >= 0 and s + b <= len(self.data)]
        if not keep:
            raise DataError(f"no complete epoch of {start}-{stop} s after any of "
                             f"{len(self.events)} cues in {len(self.data)} samples")
        x = np.stack([self.data[s + a:s + b].T for s, _ in keep])
        return x.astype(np.float32), np.array([y for _, y in keep])


MI_SWITCH_LABELS = ("class_0", "class_1", "class_2")


def read_bciess_mi(path: str | Path, stream_type: str = "EEG",
                   markers: str | None = None) -> Continuous:
    """A bci-essentials motor-imagery XDF: each `switch,n,label,window_s` marker starts a
    window of imagery of class `label`. `markers` names the cue stream; else it is the
    string stream whose markers are `switch,...`."""
    streams = read_xdf(path)
    eeg = _one(streams, lambda r: r.info.type == stream_type, f"type {stream_type!r}", path)
    cues = cue_stream(streams, path, {}, markers)
    events, window = [], 0.0
    for stamp, (value,) in zip(cues.timestamps, cues.data):
        parts = str(value).split(",")
        if parts[0] != "switch":
            continue
        if len(parts) != 4:
            raise DataError(f"{path}: marker {value!r} is not 'switch,<n>,<label>,<window_s>'")
        sample = int(np.searchsorted(eeg.timestamps, stamp))
        events.append((sample, int(parts[2])))
        window = float(parts[3])
    n = max(y for _, y in events) + 1
    labels = tuple(f"class_{k}" for k in range(n))
    return Continuous(eeg.data.astype(np.float32), eeg.info.rate, eeg.info.channels,
                      np.array(events), labels, window,
                      {label: rf"re:switch,\d+,{k},.*" for k, label in enumerate(labels)},
                      (cues.info.name, cues.info.type), (eeg.info.name, eeg.info.type))


def _one(streams, test, what: str, path):
    found = [r for r in streams if test(r)]
    if not found:
        raise DataError(f"{path}: no stream with {what}; streams: "
                        f"{[(r.info.name, r.info.type) for r in streams]}")
    return found[0]


def cue_stream(streams, path, labels: dict[str, str], name: str | None = None):
    """The string stream that cues the trials: the one `name`d, else the one with the most
    markers that map to a class (`labels`; without them, bci-essentials' `switch,...`).
    Several equally good, or none, is an error that lists the string streams and what they
    hold."""
    strings = [r for r in streams if r.info.dtype == "string" and len(r)]
    if name:
        named = [r for r in strings if r.info.name == name]
        if not named:
            raise DataError(f"{path}: no marker stream {name!r}; {_candidates(strings)}")
        return named[0]
    cls = cue_class(labels) if labels else None
    score = {r.info.name: sum(1 for (v,) in r.data if (
        cls(str(v)) is not None if cls else str(v).startswith("switch,"))) for r in strings}
    best = max(score.values(), default=0)
    top = [r for r in strings if score[r.info.name] == best]
    if best == 0:
        want = ("markers " + ", ".join(repr(m) for m in labels.values()) if labels
                else "'switch,...' cues (bci-essentials); say which markers cue which class "
                     "with --labels")
        raise DataError(f"{path}: no string stream holds {want}; {_candidates(strings)}")
    if len(top) > 1:
        raise DataError(f"{path}: streams {[r.info.name for r in top]} both hold {best} cue "
                        f"markers; name one with --markers NAME ({_candidates(strings)})")
    return top[0]


def _candidates(strings) -> str:
    """The string streams with their marker counts and a few of their markers."""
    if not strings:
        return "the file has no string (marker) stream"
    return "string streams: " + "; ".join(
        f"{r.info.name!r} ({len(r)} markers, e.g. {sorted({str(v[0]) for v in r.data})[:4]})"
        for r in strings)


def read_xdf_mi(path: str | Path, labels: dict[str, str], stream_type: str = "EEG",
                window_s: float = 4.0, markers: str | None = None) -> Continuous:
    """An XDF of an EEG stream and a string marker stream; `labels` maps each class to the
    marker that cues it (`cue_class`), `markers` names the marker stream (else `cue_stream`
    finds it). Without `labels`, a bci-essentials recording's `switch` markers."""
    streams = read_xdf(path)
    cues = cue_stream(streams, path, labels, markers)
    if not labels:
        return read_bciess_mi(path, stream_type, cues.info.name)
    eeg = _one(streams, lambda r: r.info.type.upper() == stream_type.upper() and len(r),
               f"type {stream_type!r} and samples", path)
    classes = tuple(labels)
    cls = cue_class(labels)
    events = [(int(np.searchsorted(eeg.timestamps, t)), cls(str(v)))
              for t, (v,) in zip(cues.timestamps, cues.data) if cls(str(v)) is not None]
    found = {k for _, k in events}
    unused = [name for k, name in enumerate(classes) if k not in found]
    if unused:
        raise DataError(f"{path}: no marker for class(es) {unused} ({[labels[n] for n in unused]})"
                        f" in stream {cues.info.name!r}; {_candidates([cues])}")
    return Continuous(eeg.data.astype(np.float32), eeg.info.rate, eeg.info.channels,
                      np.array(events), classes, window_s, dict(labels),
                      (cues.info.name, cues.info.type), (eeg.info.name, eeg.info.type))


BCI_IV_2A_CUES = {"769": "left_hand", "770": "right_hand", "771": "feet", "772": "tongue"}


def read_bci_iv_2a(path: str | Path) -> Continuous:
    """A BCI Competition IV 2a training file (A0xT.gdf): 22 EEG channels (the 3 EOG dropped),
    cues 769-772, 4 s of imagery after each cue."""
    import mne

    raw = _mne_read(mne.io.read_raw_gdf, path, "GDF")
    eog = [c for c in raw.ch_names if "EOG" in c.upper()]
    raw.drop_channels(eog)
    events, ids = mne.events_from_annotations(raw, verbose="error")
    code_of = {v: k for k, v in ids.items()}
    labels = tuple(BCI_IV_2A_CUES.values())
    rows = [(s, labels.index(BCI_IV_2A_CUES[code_of[c]])) for s, _, c in events
            if code_of[c] in BCI_IV_2A_CUES]
    if not rows:
        raise DataError(f"{path}: no cue events 769-772 (found {sorted(ids)}); an evaluation "
                         "file (A0xE) has its cues as 783 and its labels in a separate file")
    return Continuous(raw.get_data().T.astype(np.float32) * 1e6, raw.info["sfreq"],
                      tuple(raw.ch_names), np.array(rows), labels, 4.0)


PHYSIONET_IMAGERY_RUNS = {4: ("left_fist", "right_fist"), 8: ("left_fist", "right_fist"),
                          12: ("left_fist", "right_fist"), 6: ("both_fists", "both_feet"),
                          10: ("both_fists", "both_feet"), 14: ("both_fists", "both_feet")}


def read_physionet_mi(path: str | Path, include_rest: bool = False) -> Continuous:
    """A PhysioNet EEG Motor Movement/Imagery run (S001R04.edf): T1/T2 cues mean left/right
    fist in runs 3, 4, 7, 8, 11, 12 and both fists/both feet in the others; T0 is rest."""
    import mne

    raw = _mne_read(mne.io.read_raw_edf, path, "EDF+")
    stem = Path(path).stem.upper()
    run = int(stem.split("R")[-1]) if "R" in stem and stem.split("R")[-1].isdigit() else 4
    names = PHYSIONET_IMAGERY_RUNS.get(run, ("left_fist", "right_fist") if run in (3, 7, 11)
                                       else ("both_fists", "both_feet"))
    labels = (("rest",) if include_rest else ()) + names
    codes = {"T1": names[0], "T2": names[1]} | ({"T0": "rest"} if include_rest else {})
    rows, durations = [], []
    for ann in raw.annotations:
        if ann["description"] in codes:
            rows.append((int(round(ann["onset"] * raw.info["sfreq"])),
                         labels.index(codes[ann["description"]])))
            durations.append(ann["duration"])
    if not rows:
        found = sorted(set(raw.annotations.description))
        raise DataError(f"{path}: no T1/T2 annotations (found {found})")
    channels = tuple(c.strip(".") for c in raw.ch_names)
    return Continuous(raw.get_data().T.astype(np.float32) * 1e6, raw.info["sfreq"], channels,
                      np.array(rows), labels, float(np.median(durations)))


def _mne_read(reader, path: str | Path, kind: str):
    """MNE's reader, its errors turned into one naming the file and what it should be."""
    if not Path(path).is_file():
        raise DataError(f"{path}: no such file")
    try:
        return reader(str(path), preload=True, verbose="error")
    except Exception as e:
        raise DataError(f"{path}: not a readable {kind} file ({type(e).__name__}: "
                        f"{str(e).strip()[:200]})") from e


FORMATS = {"xdf": ".xdf", "bci_iv_2a": ".gdf", "physionet": ".edf"}


def files(paths: tuple[Path, ...]) -> list[Path]:
    """The files given, with each folder's files (not hidden ones) in name order; a folder of
    subject folders gives the files of each."""
    out = []
    for p in map(Path, paths):
        if not p.is_dir():
            out.append(p)
            continue
        for q in sorted(q for q in p.iterdir() if not q.name.startswith(".")):
            out.extend(files((q,)) if q.is_dir() else [q] if q.is_file() else [])
    return out


PHYSIONET_NAME = re.compile(r"(S\d{3})R\d{2}", re.IGNORECASE)


def subject_of(path: Path, given: tuple[Path, ...]) -> str:
    """Whose recording a file is: BIDS `sub-<label>` in its path, the subject of a PhysioNet
    name (S001R04 -> S001), else the subject folder it sits in below a folder given (or the
    folder given, when several are); else the file itself."""
    path = Path(path)
    bids = next((part for part in path.parts if part.lower().startswith("sub-")), None)
    if bids:
        return bids
    physionet = PHYSIONET_NAME.fullmatch(path.stem)
    if physionet:
        return physionet.group(1).upper()
    for root in map(Path, given):
        if root.is_dir() and path.is_relative_to(root):
            inner = path.relative_to(root).parts
            if len(inner) > 1:
                return inner[0]
            if len(given) > 1:
                return root.name
    return str(path)


def read(data: Data) -> tuple[list[str], list[Continuous]]:
    """The files of `data` (a folder: its files) read by their format and brought to one
    channel list and rate (`harmonise`): their names, and their recordings."""
    paths = files(data.paths)
    names = [str(p) for p in paths]
    return names, harmonise(load(paths, data), names)


def subjects(data: Data) -> dict[str, list[int]]:
    """The files of `data` (indices into `read`'s order) by subject (`subject_of`)."""
    out: dict[str, list[int]] = {}
    for i, path in enumerate(files(data.paths)):
        out.setdefault(subject_of(path, data.paths), []).append(i)
    return out


def load(paths: list[Path], data: Data) -> list[Continuous]:
    """Each file read by its format (`--format`, else its suffix)."""
    sets = []
    for path in paths:
        fmt = data.format or next((f for f, suffix in FORMATS.items()
                                   if Path(path).suffix.lower() == suffix), None)
        if fmt is None:
            raise DataError(f"{path}: cannot tell the format from the suffix "
                            f"{Path(path).suffix!r}; give --format, one of {list(FORMATS)}")
        if fmt == "xdf":
            sets.append(read_xdf_mi(path, data.labels, markers=data.markers))
        elif fmt == "bci_iv_2a":
            sets.append(read_bci_iv_2a(path))
        elif fmt == "physionet":
            sets.append(read_physionet_mi(path))
        else:
            raise DataError(f"--format {fmt!r} is not one BTTA-DG reads: {list(FORMATS)}")
    return sets


def harmonise(sets: list[Continuous], names: list[str], channels: tuple[str, ...] | None = None,
              rate: float | None = None) -> list[Continuous]:
    """Every set on one channel list (default: the first file's) and one rate (default: the
    first file's), classes merged into one label list in first-seen order."""
    channels = tuple(channels or sets[0].channels)
    rate = float(rate or sets[0].rate)
    labels = tuple(dict.fromkeys(label for s in sets for label in s.labels))
    out = []
    for name, s in zip(names, sets):
        index = {c.upper(): i for i, c in enumerate(s.channels)}
        missing = [c for c in channels if c.upper() not in index]
        if missing:
            raise DataError(f"{name}: lacks channels {missing} that the first recording has; "
                            f"it has {list(s.channels)}")
        data = s.data[:, [index[c.upper()] for c in channels]]
        events = s.events.copy()
        if s.rate != rate:
            data = signal.resample_poly(data, *_ratio(rate, s.rate), axis=0).astype(np.float32)
            events[:, 0] = np.round(events[:, 0] * rate / s.rate).astype(int)
        events[:, 1] = [labels.index(s.labels[k]) for k in events[:, 1]]
        out.append(replace(s, data=data, rate=rate, channels=channels, events=events,
                           labels=labels))
    return out


def _ratio(new: float, old: float) -> tuple[int, int]:
    f = Fraction(new / old).limit_denominator(1000)
    return f.numerator, f.denominator
