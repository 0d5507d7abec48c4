"""One cell of the ei_snn job: train one spiking network (a kind, a depth, a dataset) and
probe it layer by layer.

Kinds (`kind`): `ei` (E-I circuits with E-I Init and E-I Prop), `ei_no_init`, `ei_no_prop`
(the two ablations), `plain` (linear layers, no normalization) and `bn` (linear layers with
BatchNorm); see `model.py`.

Metrics:
- `accuracy`: test accuracy (chance is 0.1); `diverged`: 1 if the loss became non-finite.
- `train_loss`: mean cross-entropy of the last epoch.
- `rate_first` / `rate_last`: firing rate (spikes per unit per step) of the first and last
  hidden layer; `silent_layers`: share of hidden layers with a rate under 0.001.
- E-I kinds only: `ei_ratio` (inhibitory over excitatory current, mean over layers; 1 is
  exact balance) and `ei_corr` (correlation across samples of each unit's excitatory and
  inhibitory currents, mean over units and layers).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field

from edgert.methods.ei_snn import figures
from edgert.methods.ei_snn.data import CLASSES, SETS, load
from edgert.methods.ei_snn.model import KINDS, SpikingNet
from edgert.methods.ei_snn.train import fit, probe
from edgert.methods.threads import one_thread


class Config(BaseModel):
    """One network: `depth` weight layers of `width` units, `steps` time steps (T)."""

    dataset: str = Field("digits", pattern="|".join(SETS))
    kind: str = Field("ei", pattern="|".join(KINDS))
    depth: int = Field(4, ge=2, le=32)
    width: int = Field(128, ge=8)
    steps: int = Field(4, ge=1)
    epochs: int = Field(25, ge=1)
    lr: float = Field(0.005, gt=0)
    batch: int = Field(64, ge=1)


def grid(quick: bool) -> list[dict]:
    """Every kind at depths 4, 8 and 16 on both datasets, 20 epochs at one learning rate;
    the full grid adds depth 12, trains 40 epochs and sweeps the learning rate (BatchNorm
    prefers a higher one than the E-I circuits), so each kind can be read at its best."""
    if quick:
        return [Config(dataset=d, kind=k, depth=n, epochs=20).model_dump()
                for d in SETS for n in (4, 8, 16) for k in KINDS]
    return [Config(dataset=d, kind=k, depth=n, epochs=40, lr=lr).model_dump()
            for d in SETS for n in (4, 8, 12, 16) for k in KINDS for lr in (0.002, 0.005, 0.02)]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    torch.manual_seed(seed)
    x, y, xt, yt = (torch.as_tensor(a) for a in load(cfg.dataset, seed))
    net = SpikingNet(cfg.kind, x.shape[1], CLASSES, cfg.depth, cfg.width, cfg.steps)
    losses, diverged = fit(net, x, y, cfg.epochs, cfg.lr, cfg.batch, seed)
    seen = probe(net, xt, yt)
    rates = seen["rates"]
    _table(out / "layers.csv", seen)
    figures.layers(seen, f"{cfg.kind}, depth {cfg.depth}, {cfg.dataset}",
                   out / "layers.png")
    metrics = {
        "accuracy": seen["accuracy"],
        "diverged": float(diverged),
        "train_loss": losses[-1] if losses else float("nan"),
        "rate_first": float(rates[0]),
        "rate_last": float(rates[-1]),
        "silent_layers": float((rates < 1e-3).mean()),
    }
    if "ei_ratio" in seen:
        metrics |= {"ei_ratio": float(np.nanmean(seen["ei_ratio"])),
                    "ei_corr": float(np.nanmean(seen["ei_corr"]))}
    return metrics


def _table(path: Path, seen: dict) -> None:
    names = [k for k in ("rates", "ei_ratio", "ei_corr") if k in seen]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["layer", *names])
        for i in range(len(seen["rates"])):
            w.writerow([i + 1, *(f"{float(seen[n][i]):.4f}" for n in names)])
