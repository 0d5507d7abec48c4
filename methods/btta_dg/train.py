"""Training SincAdaptNet on source users, and the checkpoint it leaves.

Every time step is trained toward the trial's class (cross-entropy averaged over steps), so
each p_t is a class distribution of its own. A fifth of the source trials is held out: the
source statistics of the adaptation's mixture come from them, not from trials the network
has memorised.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy import signal
from rich.progress import Progress
from torch import nn

from edgert.runtime.plugin import Data, DataError, own_out
from edgert.methods.btta_dg import synth
from edgert.methods.btta_dg.data import Continuous, read
from edgert.methods.btta_dg.align import align_offline
from edgert.methods.cache import CHECKPOINT, cache_folder
from edgert.methods.btta_dg.bayes import SourceStats, source_stats
from edgert.methods.btta_dg.model import SincAdaptNet
from edgert.export.checkpoint import load_checkpoint
from edgert.runtime.progress import progress_bar

log = logging.getLogger(__name__)

FEATURES = ("dirichlet", "mean_softmax")
BASELINE = "baseline.pt"  # beside the checkpoint: the same network trained on unaligned trials


@dataclass
class Trained:
    model: SincAdaptNet
    sources: dict[str, SourceStats]  # by feature kind: BTTA-DG's, and the ablation's
    labels: tuple[str, ...]
    meta: dict
    examples: np.ndarray | None = None  # a few training trials: the export's parity inputs

    @property
    def source(self) -> SourceStats:
        return self.sources["dirichlet"]

    def save(self, folder: Path, file: str = CHECKPOINT) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / file
        torch.save({"config": self.model.config, "state": self.model.state_dict(),
                    "sources": {k: v.to_dict() for k, v in self.sources.items()}, "labels": list(self.labels),
                    "meta": self.meta,
                    "examples": None if self.examples is None else torch.from_numpy(
                        np.ascontiguousarray(self.examples))}, path)
        return path

    @classmethod
    def load(cls, path: Path) -> "Trained":
        path = Path(path)
        if path.is_dir():
            path = path / CHECKPOINT
        if not path.exists():
            raise FileNotFoundError(f"{path}: no BTTA-DG checkpoint; make one with "
                                    "`edgert train btta_dg --out DIR`")
        saved = load_checkpoint(path, "a BTTA-DG checkpoint",
                                "make one with `edgert train btta_dg --out DIR`")
        model = SincAdaptNet(**saved["config"])
        model.load_state_dict(saved["state"])
        sources = {k: SourceStats.from_dict(v) for k, v in saved["sources"].items()}
        examples = saved.get("examples")
        return cls(model.eval(), sources, tuple(saved["labels"]), saved.get("meta", {}),
                   None if examples is None else examples.numpy())


MIN_STEPS = 100  # optimizer steps: a user's 30 trials at 25 epochs would give 25


def fit(x: np.ndarray, y: np.ndarray, rate: float, classes: int, sinc: bool = True,
        epochs: int = 25, seed: int = 0, lr: float = 3e-3, batch: int = 32,
        progress: Progress | None = None, description: str = "training") -> SincAdaptNet:
    """Train on (trials, channels, samples) uV with labels `y`; returns the model in eval mode.
    Small recordings get more epochs, so that every fit takes at least MIN_STEPS steps."""
    torch.manual_seed(seed)
    epochs = max(epochs, -(-MIN_STEPS // -(-len(x) // batch)))
    scale = float(1.0 / max(np.std(x), 1e-12))  # uV or whitened: the first layer sees unit std
    model = SincAdaptNet(x.shape[1], x.shape[2], classes, rate, sinc=sinc, scale=scale)
    band = [p for n, p in model.named_parameters() if n.endswith("_hz")]
    rest = [p for n, p in model.named_parameters() if not n.endswith("_hz")]
    # band edges are in Hz: Adam steps of up to 1 Hz let them cross the spectrum in a few
    # epochs (at 0.1 Hz they hardly leave their initial tiling, and generalise worse)
    opt = torch.optim.AdamW([{"params": rest}, {"params": band, "lr": 1.0, "weight_decay": 0}],
                            lr=lr, weight_decay=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    xs, ys = torch.from_numpy(np.ascontiguousarray(x, np.float32)), torch.from_numpy(y).long()
    gen = torch.Generator().manual_seed(seed)
    task = progress.add_task(description, total=epochs) if progress else None
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(xs), generator=gen).split(batch):
            logits = model.logits(xs[idx])
            steps = logits.shape[1]
            loss = loss_fn(logits.reshape(-1, classes), ys[idx].repeat_interleave(steps))
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if progress:
            progress.advance(task)
    return recalibrate(model, xs)


@torch.no_grad()
def recalibrate(model: SincAdaptNet, xs: torch.Tensor, batch: int = 128) -> SincAdaptNet:
    """Batch-norm statistics re-estimated over all training trials with the final weights.
    The running averages kept during training mix in early weights and dropout; on a small
    recording they were far enough off to put every trial in one class."""
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    model.eval()
    for bn in norms:
        bn.reset_running_stats()
        bn.momentum = None
        bn.train()
    for part in xs.split(batch):
        model.features(part)
    for bn in norms:
        bn.momentum = 0.1
    return model.eval()


@torch.no_grad()
def predict(model: SincAdaptNet, x: np.ndarray, batch: int = 128) -> np.ndarray:
    """(trials, steps, classes) probabilities."""
    model.eval()
    xs = torch.from_numpy(np.ascontiguousarray(x, np.float32))
    return torch.cat([model(part) for part in xs.split(batch)]).numpy()


def train_source(x: np.ndarray, y: np.ndarray, rate: float, labels: tuple[str, ...],
                 sinc: bool = True, epochs: int = 25,
                 seed: int = 0, progress: Progress | None = None, meta: dict | None = None
                 ) -> Trained:
    """Train on 80 % of the source trials; the mixture's source statistics come from the rest
    (a fifth of each class, so every class has some)."""
    rng = np.random.default_rng(seed)
    held = np.concatenate([rng.permutation(np.flatnonzero(y == k))[:max(1, len(y[y == k]) // 5)]
                           for k in range(len(labels))])
    fit_idx = np.setdiff1d(np.arange(len(y)), held)
    model = fit(x[fit_idx], y[fit_idx], rate, len(labels), sinc, epochs, seed,
                progress=progress, description="training SincAdaptNet" if sinc else
                "training the conv ablation")
    probs = predict(model, x[held])
    sources = {kind: source_stats(probs, y[held], kind) for kind in FEATURES}
    accuracy = float(np.mean(probs.mean(1).argmax(1) == y[held]))  # source trials not fitted
    return Trained(model, sources, labels, dict(meta or {}, rate=rate, epochs=epochs, seed=seed,
                                                holdout_accuracy=accuracy), x[held[:8]])


def population(subjects: list[int], trials: int, sessions: int = 2, shift: float = 1.0,
               progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic trials of several users: data, labels, and a (subject, session) group id."""
    xs, ys, groups = [], [], []
    task = progress.add_task("simulating users", total=len(subjects)) if progress else None
    for s in subjects:
        subject = synth.make_subject(s, shift)
        for k in range(sessions):
            x, y = synth.trials(subject, synth.make_session(subject, k, shift), trials, seed=k)
            xs.append(x)
            ys.append(y)
            groups.append(np.full(len(y), s * 100 + k))
        if progress:
            progress.advance(task)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(groups)


EPOCH = (0.5, 3.5)  # seconds after the cue that the decoder sees
BANDPASS_HZ = (4.0, 40.0)  # what pipelines/bci.yaml applies before the decoder
ORDER = 4


def epoch(x: np.ndarray, rate: float = synth.RATE, window: tuple[float, float] = EPOCH
          ) -> np.ndarray:
    """Cue-locked trials (trials, channels, samples) as the live pipeline hands them to the
    decoder: band-passed by the same causal Butterworth (settled on the first sample, as the
    pipeline's filter is long before a trial), then cropped to the decoder's window. A
    decoder trained on unfiltered trials decoded the live, filtered ones at chance."""
    sos = signal.butter(ORDER, BANDPASS_HZ, btype="bandpass", fs=rate, output="sos")
    zi = signal.sosfilt_zi(sos)[:, None, None, :] * x[None, ..., :1]  # (sections, trials, ch, 2)
    filtered, _ = signal.sosfilt(sos, x, axis=-1, zi=zi)
    return filtered[..., int(window[0] * rate):int(window[1] * rate)].astype(np.float32)


def recorded_trials(sets: list[Continuous]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A user's recordings as the live pipeline cuts them: band-passed continuously, then the
    decoder's window after each cue; trials, labels and the file each came from."""
    parts = [s.filtered(*BANDPASS_HZ, ORDER).epochs(*EPOCH) for s in sets]
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    return x, y, np.concatenate([np.full(len(p[1]), i) for i, p in enumerate(parts)])


def recording(sets: list[Continuous]) -> dict:
    """What a live run needs to know of the recordings trained on: channels, rate, and the
    EEG and cue streams and each class's cue marker where the files are LSL recordings."""
    cues: dict[str, str] = {}
    for s in sets:
        cues.update({k: v for k, v in (s.cues or {}).items() if k not in cues})
    cue = next((s.cue_stream for s in sets if s.cue_stream), None)
    eeg = next((s.eeg_stream for s in sets if s.eeg_stream), None)
    return {"channels": list(sets[0].channels), "rate_hz": sets[0].rate, "cues": cues or None,
            "cue_stream": _stream(cue), "eeg_stream": _stream(eeg)}


def _stream(named: tuple[str, str] | None) -> dict | None:
    return {"name": named[0], "type": named[1]} if named else None


MIN_TRIALS = 5  # per class: a fifth of them makes the adaptation's source statistics


def train_on(data: Data, out: Path, quick: bool = False, seed: int = 0) -> Path:
    """Train on a user's recordings (aligned per file, as sessions are) and save the
    checkpoint, with the channels and rate the live stream must match."""
    names, sets = read(data)
    x, y, groups = recorded_trials(sets)
    labels, counts = sets[0].labels, np.bincount(y, minlength=len(sets[0].labels))
    if counts.min() < MIN_TRIALS:
        by_class = dict(zip(labels, counts.tolist()))
        raise DataError(f"{len(y)} trials in {len(sets)} file(s), {by_class} by class: "
                        f"training needs at least {MIN_TRIALS} of each")
    meta = {"files": names, "quick": quick, "channels": list(sets[0].channels),
            "recording": recording(sets)}
    stream = meta["recording"]["cue_stream"]
    log.info("read %d trials in %d file(s), %d channels at %g Hz: %s%s", len(y), len(sets),
             len(sets[0].channels), sets[0].rate,
             ", ".join(f"{label} {n}" for label, n in zip(labels, counts.tolist())),
             f"; cues from stream {stream['name']!r}" if stream else "")
    with progress_bar() as progress:
        return train_pair(x, y, groups, sets[0].rate, labels, 12 if quick else 25, seed, meta,
                          out, progress)


def train(out: Path | None = None, quick: bool = False, seed: int = 0,
          data: Data | None = None) -> Path:
    """Train on Euclidean-aligned synthetic source users (or on `data`, a user's recordings)
    and save the checkpoint."""
    if data is not None:
        return train_on(data, own_out(out), quick, seed)
    subjects, count, epochs = (list(range(1, 5)), 60, 12) if quick else (list(range(1, 9)),
                                                                          120, 25)
    with progress_bar() as progress:
        x, y, groups = population(subjects, count, progress=progress)
        return train_pair(epoch(x), y, groups, synth.RATE, synth.LABELS, epochs, seed,
                          {"subjects": subjects, "quick": quick}, out or cache_folder("btta_dg"),
                          progress)


def train_pair(x: np.ndarray, y: np.ndarray, groups: np.ndarray, rate: float,
               labels: tuple[str, ...], epochs: int, seed: int, meta: dict, out: Path,
               progress: Progress | None = None) -> Path:
    """BTTA-DG's decoder, trained on trials aligned per group (`checkpoint.pt`), and the same
    network trained on the trials as they are (`baseline.pt`): the no-adaptation decoder that
    live comparisons run beside it."""
    trained = train_source(align_offline(x, groups), y, rate, labels, epochs=epochs, seed=seed,
                           progress=progress, meta=dict(meta, aligned=True))
    baseline = train_source(x, y, rate, labels, epochs=epochs, seed=seed, progress=progress,
                            meta=dict(meta, aligned=False))
    baseline.save(out, BASELINE)
    return trained.save(out)
