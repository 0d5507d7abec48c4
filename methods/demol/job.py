"""One cell of the demol job: one target, one model, trained on a scaffold split.

Models (`model`): `demol` (dual graph + Double-Helix blocks + covalent-radius regulariser),
`no_reg` (the same without the regulariser), `atom_only` (GINE over the atom graph, widened
to DeMol's parameter count) and `bond_only` (the bond channel alone, likewise widened).

Metrics (test molecules, whose scaffolds no training molecule has; the target's units):
- `mae`, `rmse`; `mae_conjugated` / `mae_unconjugated` (molecules with a conjugated system of
  3 bonds or more, or not) and `mae_stereo` / `mae_no_stereo` (a stereocentre or an E/Z
  bond, or not): where bond-level structure should matter most.
- `length_mae`: error (A) of the bond lengths the model predicts from noisy ones;
  `bond_plausible`: the share of those within the covalent band (see `covalent_penalty`).
- `params`, `n_train`, `n_test`.
"""
from __future__ import annotations

import fcntl
import math
import pickle
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field
from torch_geometric.loader import DataLoader

from edgert.methods.cache import cache_folder
from edgert.methods.demol import figures
from edgert.methods.demol.data import TARGETS, load, scaffold_split
from edgert.methods.demol.graphs import DualGraph, conformer, featurize, subsets
from edgert.methods.demol.model import KINDS, Net, matched_hidden, params
from edgert.methods.threads import one_thread

LOW, HIGH = 0.75, 0.4  # plausible bond length: 0.75 x covalent sum .. covalent sum + 0.4 A


class Config(BaseModel):
    """`noise`: A of Gaussian noise on the bond lengths the model is given while training;
    `data`/`column`: a user's CSV of SMILES and a target instead of `target`."""

    target: str = Field("qm9_gap", pattern="|".join(TARGETS))
    model: str = Field("demol", pattern="|".join(KINDS))
    hidden: int = Field(64, ge=8)
    layers: int = Field(3, ge=1)
    epochs: int = Field(60, ge=1)
    lr: float = Field(1e-3, gt=0)
    batch: int = Field(32, ge=1)
    noise: float = Field(0.1, ge=0)
    geometry_weight: float = Field(1.0, ge=0)
    reg_weight: float = Field(1.0, ge=0)
    n_xtb: int = Field(600, ge=20)
    data: str | None = None
    column: str | None = None


def grid(quick: bool) -> list[dict]:
    """Every model on QM9's gap, ESOL and the xTB gap, 40 epochs; the full grid adds QM9's
    and xTB's dipoles, more xTB molecules, and trains 150 epochs."""
    if quick:
        return [Config(target=t, model=m, epochs=40).model_dump()
                for t in ("qm9_gap", "esol", "xtb_gap") for m in KINDS]
    return [Config(target=t, model=m, epochs=150, n_xtb=3000).model_dump()
            for t in TARGETS for m in KINDS]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def graphs(cfg: Config) -> tuple[list, list[dict]]:
    """Featurized molecules of the config's set (a conformer each, made once per machine and
    cached) and their bond-sensitive subsets; molecules RDKit cannot embed are dropped. The
    cache holds tensors, strings and numbers only and loads with `weights_only=True`: a file
    planted in the cache runs no code, and one that is not such a cache is made anew."""
    smiles, y = load(cfg.target, cfg.n_xtb, cfg.data, cfg.column)
    name = f"tensors_{cfg.target if not cfg.data else Path(cfg.data).stem}_{len(smiles)}.pt"
    folder = cache_folder("demol")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with open(folder / "graphs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = None if cfg.data else _cached(path)
        if rows is None:
            rows = []
            for s, value in zip(smiles, y):
                mol = conformer(s)
                if mol is not None and mol.GetNumBonds() > 0:
                    rows.append((s, featurize(mol, float(value)).to_dict(), subsets(mol)))
            torch.save(rows, path)
    return [DualGraph(**r[1]) for r in rows], [dict(r[2], smiles=r[0]) for r in rows]


def _cached(path: Path) -> list | None:
    """The rows of a graph cache, or None where there is none or it is not one."""
    if not path.exists():
        return None
    try:
        return torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError):
        return None


def covalent_penalty(length: torch.Tensor, covalent: torch.Tensor) -> torch.Tensor:
    """Squared distance of each predicted bond length (A) outside the plausible band
    [0.75 x covalent sum, covalent sum + 0.4 A], the usual bond-perception bounds."""
    return (torch.relu(LOW * covalent - length) ** 2 + torch.relu(length - covalent - HIGH) ** 2)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    torch.manual_seed(seed)
    data, groups = graphs(cfg)
    train, valid, test = scaffold_split([g["smiles"] for g in groups], seed)
    y = torch.cat([data[i].y for i in train])
    mean, std = float(y.mean()), float(y.std())
    reference = params(Net("demol", cfg.hidden, cfg.layers))
    hidden = cfg.hidden if cfg.model in ("demol", "no_reg") else \
        matched_hidden(cfg.model, reference, cfg.layers)
    net = Net(cfg.model, hidden, cfg.layers)
    gen = torch.Generator().manual_seed(seed)
    best, best_state = math.inf, None
    opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.epochs)
    loader = DataLoader([data[i] for i in train], batch_size=cfg.batch, shuffle=True,
                        generator=gen)
    reg = cfg.reg_weight if cfg.model != "no_reg" else 0.0
    valid_set = [data[i] for i in valid]
    valid_truth = np.array([g.y.item() for g in valid_set])
    for _ in range(cfg.epochs):
        net.train()
        for g in loader:
            noisy = g.length + cfg.noise * torch.randn(g.length.shape, generator=gen)
            prop, length = net(g, noisy)
            loss = torch.nn.functional.mse_loss(prop, (g.y - mean) / std)
            loss = loss + cfg.geometry_weight * torch.nn.functional.mse_loss(length, g.length)
            loss = loss + reg * covalent_penalty(length, g.covalent).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        score = float(np.abs(_predict(net, valid_set, mean, std)[0] - valid_truth).mean())
        if score < best:
            best, best_state = score, {k: v.clone() for k, v in net.state_dict().items()}
    net.load_state_dict(best_state)
    test_set = [data[i] for i in test]
    pred, length_err, plausible = _predict(net, test_set, mean, std, cfg.noise, seed)
    truth = np.array([g.y.item() for g in test_set])
    err = np.abs(pred - truth)
    metrics = {"mae": float(err.mean()), "rmse": float(np.sqrt((err ** 2).mean())),
               "length_mae": length_err, "bond_plausible": plausible,
               "params": float(params(net)), "n_train": float(len(train)),
               "n_test": float(len(test))}
    for key in ("conjugated", "stereo"):
        has = np.array([groups[i][key] for i in test])
        no = "un" if key == "conjugated" else "no_"
        metrics[f"mae_{key}"] = float(err[has].mean()) if has.any() else float("nan")
        metrics[f"mae_{no}{key}"] = float(err[~has].mean()) if (~has).any() else float("nan")
    figures.parity(truth, pred, np.array([groups[i]["conjugated"] for i in test]),
                   f"{cfg.model} on {cfg.target}: test MAE {err.mean():.3f}",
                   out / "parity.png")
    return metrics


@torch.no_grad()
def _predict(net: Net, items: list, mean: float, std: float, noise: float = 0.0,
             seed: int = 0) -> tuple[np.ndarray, float, float]:
    """Predictions in the target's units; with `noise`, also the bond-length error (A) and the
    plausible share of the lengths predicted from noisy ones."""
    net.eval()
    gen = torch.Generator().manual_seed(seed + 1)
    preds, errors, inside = [], [], []
    for g in DataLoader(items, batch_size=256):
        prop, _ = net(g, g.length)
        preds.append(prop * std + mean)
        if noise:
            _, length = net(g, g.length + noise * torch.randn(g.length.shape, generator=gen))
            errors.append((length - g.length).abs())
            inside.append(covalent_penalty(length, g.covalent) == 0)
    pred = torch.cat(preds).numpy()
    if not noise:
        return pred, float("nan"), float("nan")
    return pred, float(torch.cat(errors).mean()), float(torch.cat(inside).float().mean())
