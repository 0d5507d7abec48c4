"""`edgert evaluate btta_dg`: every variant, online, trial by trial, at batch size 1.

Protocols:
- loso: leave one synthetic user out; train on the others (both sessions), adapt online on the
  held-out user's second session.
- cross_session: train on every synthetic user's first session, adapt on their second.
- eeg_mi: the shared real recordings (one user, 4 runs); train on three runs, adapt online on
  the fourth, each run in turn (`--quick`: the last run only).
- leave_one_out (`--data`): the same on a user's recordings, one file held out at a time.
BTTA-DG runs on incrementally Euclidean-aligned trials (align.py), as the live pipeline does;
`ablation_no_alignment` is BTTA-DG on raw trials. Adaptation cost is the time a variant
spends per trial beyond the plain forward pass (alignment included where it is used).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel
from rich.progress import Progress

from edgert.methods.btta_dg import synth
from edgert.methods.cache import recordings_folder
from edgert.methods.btta_dg.align import IncrementalAlignment, align_offline
from edgert.methods.btta_dg.baselines import BNAdapt, Tent, TTime
from edgert.methods.btta_dg.bayes import BayesianAdapter
from edgert.methods.btta_dg.diagnose import diagnose
from edgert.methods.btta_dg.references import REFERENCES, fit as fit_reference, probabilities
from edgert.runtime.plugin import Data, DataError
from edgert.methods.btta_dg.data import read, read_bciess_mi, subjects
from edgert.methods.btta_dg.train import (EPOCH, Trained, epoch, population, predict,
                                          recorded_trials, train_source)
from edgert.runtime.progress import progress_bar

log = logging.getLogger(__name__)

VARIANTS = ("btta_dg", "no_adaptation", "euclidean_alignment", "bn_adapt", "tent", "t_time",
            *REFERENCES, "ablation_conv", "ablation_mean_softmax", "ablation_no_gmm",
            "ablation_no_alignment")


class Config(BaseModel):
    subjects: int = 6
    trials_per_session: int = 100
    test_trials: int = 100
    epochs: int = 20
    shift: float = 1.0
    tempering: float = 1.0
    warmup: int = 4
    seed: int = 0
    real_runs: list[int] = [1, 2, 3, 4]

    @classmethod
    def quick(cls) -> "Config":
        return cls(subjects=4, trials_per_session=48, test_trials=60, epochs=8, real_runs=[4])


class Models:
    """The decoders every protocol needs, trained on the same source trials: SincAdaptNet on
    raw and on aligned trials, the plain-convolution ablation on aligned trials, and the
    reference decoders (CSP + LDA, tangent space + LR) on raw trials, as users run them."""

    def __init__(self, x, y, groups, rate, labels, cfg: Config, progress: Progress):
        kw = dict(epochs=cfg.epochs, seed=cfg.seed, progress=progress)
        aligned = align_offline(x, groups)
        self.raw = train_source(x, y, rate, labels, **kw)
        self.aligned = train_source(aligned, y, rate, labels, **kw)
        self.conv = train_source(aligned, y, rate, labels, sinc=False, **kw)
        self.references = {name: fit_reference(name, x, y) for name in REFERENCES}
        self.classes = len(labels)


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, (time.perf_counter() - t) * 1e3


def _bayes(trained: Trained, probs: np.ndarray, cfg: Config, kind: str = "dirichlet",
           use_gmm: bool = True) -> tuple[np.ndarray, list[float]]:
    adapter = BayesianAdapter(trained.sources[kind], cfg.tempering, cfg.warmup,
                              use_gmm=use_gmm)
    out, cost = zip(*(timed(adapter.step, p) for p in probs))
    return np.array([post for post, _ in out]), list(cost)


def stepper(step, model, x: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """Run a model-changing baseline; its cost is its step minus a plain forward pass."""
    preds, cost = [], []
    for trial in x:
        with torch.no_grad():
            _, forward = timed(model, torch.from_numpy(trial[None]))
        probs, spent = timed(step, trial)
        preds.append(probs.mean(0))
        cost.append(max(spent - forward, 0.0))
    return np.array(preds), cost


def reference(decoder, x: np.ndarray, classes: int) -> tuple[np.ndarray, list[float]]:
    """A reference decoder's probabilities per trial; its cost is its whole prediction."""
    out, cost = zip(*(timed(probabilities, decoder, trial, classes) for trial in x))
    return np.array(out), list(cost)


def aligned_online(x: np.ndarray, timing: bool = False):
    """Trials aligned incrementally, as the live pipeline aligns them (and, with `timing`,
    the milliseconds each took)."""
    align = IncrementalAlignment(x.shape[1])
    aligned, ms = zip(*(timed(align, trial) for trial in x))
    return (np.stack(aligned), list(ms)) if timing else np.stack(aligned)


def online(models: Models, x: np.ndarray, cfg: Config) -> dict[str, tuple[np.ndarray, list]]:
    """Class probabilities (trials, classes) and per-trial adaptation cost for every variant.
    BTTA-DG and its ablations see incrementally aligned trials, as the live pipeline does."""
    aligned, align_ms = aligned_online(x, timing=True)
    p_raw = predict(models.raw.model, x)
    p_aligned = predict(models.aligned.model, aligned)
    p_conv = predict(models.conv.model, aligned)

    def bayes(trained, probs, **kw):
        post, cost = _bayes(trained, probs, cfg, **kw)
        return post, [a + c for a, c in zip(align_ms, cost)]

    return {
        "btta_dg": bayes(models.aligned, p_aligned),
        "no_adaptation": (p_raw.mean(1), [0.0] * len(x)),
        "euclidean_alignment": (p_aligned.mean(1), list(align_ms)),
        "bn_adapt": stepper(BNAdapt(models.raw.model).step, models.raw.model, x),
        "tent": stepper(Tent(models.raw.model).step, models.raw.model, x),
        "t_time": stepper(TTime(models.aligned.model).step, models.aligned.model, x),
        **{name: reference(decoder, x, models.classes)
           for name, decoder in models.references.items()},
        "ablation_conv": bayes(models.conv, p_conv),
        "ablation_mean_softmax": bayes(models.aligned, p_aligned, kind="mean_softmax"),
        "ablation_no_gmm": bayes(models.aligned, p_aligned, use_gmm=False),
        "ablation_no_alignment": _bayes(models.raw, p_raw, cfg),
    }


def _score(runs: list[tuple[dict, np.ndarray]]) -> dict[str, dict[str, float]]:
    """Accuracy over all folds, in the second half of each session (stability), and cost."""
    out = {}
    for v in VARIANTS:
        hits = np.concatenate([r[v][0].argmax(1) == y for r, y in runs])
        late = np.concatenate([(r[v][0].argmax(1) == y)[len(y) // 2:] for r, y in runs])
        folds = [float(np.mean(r[v][0].argmax(1) == y)) for r, y in runs]
        cost = np.concatenate([r[v][1] for r, _ in runs])
        out[v] = {"accuracy": float(hits.mean()), "late_accuracy": float(late.mean()),
                  "fold_std": float(np.std(folds)), "adapt_ms_p50": float(np.percentile(cost, 50)),
                  "adapt_ms_p99": float(np.percentile(cost, 99))}
    return out


def loso(cfg: Config, progress: Progress) -> dict:
    subjects = list(range(1, cfg.subjects + 1))
    x, y, groups = population(subjects, cfg.trials_per_session, shift=cfg.shift,
                              progress=progress)
    runs = []
    task = progress.add_task("leave-one-user-out folds", total=len(subjects))
    for held in subjects:
        train = groups // 100 != held
        models = Models(epoch(x[train]), y[train], groups[train], synth.RATE, synth.LABELS,
                        cfg, progress)
        subject = synth.make_subject(held, cfg.shift)
        xt, yt = synth.trials(subject, synth.make_session(subject, 1, cfg.shift),
                              cfg.test_trials, seed=7)
        runs.append((online(models, epoch(xt), cfg), yt))
        progress.advance(task)
    return _score(runs)


def cross_session(cfg: Config, progress: Progress) -> tuple[dict, Models]:
    subjects = list(range(1, cfg.subjects + 1))
    x, y, groups = population(subjects, cfg.trials_per_session, shift=cfg.shift,
                              progress=progress)
    first = groups % 100 == 0
    models = Models(epoch(x[first]), y[first], groups[first], synth.RATE, synth.LABELS, cfg,
                    progress)
    runs = [(online(models, epoch(x[groups == g]), cfg), y[groups == g])
            for g in np.unique(groups[~first])]
    return _score(runs), models


def leave_one_out(trials: list[tuple[np.ndarray, np.ndarray]], rate: float,
                  labels: tuple[str, ...], held_out: list[int], cfg: Config,
                  progress: Progress, units: list[list[int]] | None = None
                  ) -> tuple[dict, Models, list[dict]]:
    """Each held-out unit (a file, or all files of one subject) adapted online, trial by trial
    in recording order, after training on the other units, each file aligned as a session.
    Also the per-stage diagnostics of each fold (diagnose.py)."""
    units = units or [[i] for i in range(len(trials))]
    runs, diagnostics = [], []
    what = "subject" if len(units) < len(trials) else "recording"
    task = progress.add_task(f"leave-one-{what}-out folds", total=len(held_out))
    for held in held_out:
        train = [i for u, unit in enumerate(units) if u != held for i in unit]
        x = np.concatenate([trials[i][0] for i in train])
        y = np.concatenate([trials[i][1] for i in train])
        groups = np.concatenate([np.full(len(trials[i][1]), i) for i in train])
        models = Models(x, y, groups, rate, labels, cfg, progress)
        xt = np.concatenate([trials[i][0] for i in units[held]])
        yt = np.concatenate([trials[i][1] for i in units[held]])
        runs.append((online(models, xt, cfg), yt))
        diagnostics.append(diagnose(models.aligned.source,
                                    predict(models.aligned.model, aligned_online(xt)), yt,
                                    cfg.tempering, cfg.warmup,
                                    models.aligned.meta["holdout_accuracy"]))
        progress.advance(task)
    return _score(runs), models, diagnostics


def eeg_mi(cfg: Config, progress: Progress, folder: Path) -> tuple[dict, dict] | None:
    """The real-data protocol on the shared bci-essentials runs (scores, and diagnostics by
    held-out run); None, said in a warning that names where they were looked for and how to
    point there, when they are not found."""
    files = sorted((folder / "eeg_mi").glob("*MISwitch_run-*.xdf"))
    if len(files) < 2:
        log.warning("BTTA-DG's real-data protocol (eeg_mi) is skipped: no bci-essentials runs "
                    "(*MISwitch_run-*.xdf) in %s; set EDGERT_DATA to the folder that holds "
                    "eeg_mi/, or evaluate your own recordings with --data", folder / "eeg_mi")
        return None
    sets = [read_bciess_mi(f).filtered() for f in files]
    trials = [s.epochs(0.0, s.window_s) for s in sets]
    held = [r - 1 for r in cfg.real_runs]
    scores, _, diagnostics = leave_one_out(trials, sets[0].rate, sets[0].labels, held, cfg,
                                           progress)
    return scores, dict(zip((files[i].name for i in held), diagnostics))


def on_data(data: Data, cfg: Config, quick: bool) -> dict:
    """The protocol on a user's recordings, trials cut as the live pipeline cuts them: with
    several subjects (subject_of), leave one subject out, adapting online on all of the
    held-out subject's files; with one, leave one file (a session) out. `quick` holds out the
    last subject or file only."""
    names, sets = read(data)
    by_subject = subjects(data)
    units = list(by_subject.values()) if len(by_subject) > 1 else [[i] for i in range(len(sets))]
    if len(units) < 2:
        raise DataError(f"evaluate needs at least two recordings (sessions or subjects) to "
                        f"leave one out; got {names}")
    x, y, groups = recorded_trials(sets)
    trials = [(x[groups == i], y[groups == i]) for i in range(len(sets))]
    held = [len(units) - 1] if quick else list(range(len(units)))
    protocol = "leave_one_subject_out" if len(by_subject) > 1 else "leave_one_out"
    with progress_bar() as progress:
        scores, models, diagnostics = leave_one_out(trials, sets[0].rate, sets[0].labels, held,
                                                    cfg, progress, units)
    unit_names = list(by_subject) if len(by_subject) > 1 else names
    held_y = np.concatenate([trials[i][1] for u in held for i in units[u]])
    results = {v: dict(scores[v]) for v in VARIANTS}
    return {"method": "btta_dg", "config": cfg.model_dump(), "results": results,
            "data": {"files": names, "held_out": [unit_names[i] for i in held],
                     "subjects": by_subject if len(by_subject) > 1 else None,
                     "channels": list(sets[0].channels), "rate_hz": sets[0].rate,
                     "labels": list(sets[0].labels), "trials": int(len(y)),
                     "chance_accuracy": float(np.bincount(held_y).max() / len(held_y))},
            "diagnostics": dict(zip((unit_names[i] for i in held), diagnostics)),
            "learned_bands_hz": models.aligned.model.bands().numpy().round(2).tolist(),
            "epoch_s": list(EPOCH), "protocols": [protocol],
            "columns": ["accuracy", "late_accuracy", "fold_std", "adapt_ms_p50"]}


def evaluate(quick: bool = False, config: Config | None = None, data: Data | None = None
             ) -> dict:
    """Run every protocol (or, with `data`, the protocol on a user's recordings); returns
    DESIGN.md's `{"method", "config", "results"}`."""
    cfg = config or (Config.quick() if quick else Config())
    torch.manual_seed(cfg.seed)
    if data is not None:
        return on_data(data, cfg, quick)
    with progress_bar() as progress:
        by_protocol = {"loso": loso(cfg, progress)}
        by_protocol["cross_session"], models = cross_session(cfg, progress)
        real = eeg_mi(cfg, progress, recordings_folder())
        if real is not None:
            by_protocol["eeg_mi"], diagnostics = real
    skipped = {} if real is not None else {"eeg_mi": "no shared bci-essentials runs found; "
                                                     "set EDGERT_DATA"}
    results = {v: {f"{proto}_{metric}": value for proto, scores in by_protocol.items()
                   for metric, value in scores[v].items()} for v in VARIANTS}
    for v in VARIANTS:
        results[v]["accuracy"] = results[v]["loso_accuracy"]
    extra = {"learned_bands_hz": models.aligned.model.bands().numpy().round(2).tolist(),
             "epoch_s": list(EPOCH), "protocols": list(by_protocol),
             **({"diagnostics": diagnostics} if real is not None else {}),
             "columns": [f"{p}_{m}" for p in by_protocol for m in ("accuracy", "late_accuracy")]
             + ["loso_adapt_ms_p50", "loso_adapt_ms_p99"], **({"skipped": skipped} if skipped
                                                               else {})}
    return {"method": "btta_dg", "config": cfg.model_dump(), "results": results, **extra}
