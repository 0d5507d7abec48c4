"""The test-time adaptation baselines BTTA-DG is compared with, all online at batch size 1.

- Euclidean alignment alone: `align.py`, the decoder trained on per-user aligned source data.
- BN adapt: re-estimate batch-norm statistics as a running mean over the user's trials.
- Tent (Wang et al. 2021): BN statistics from the target plus one gradient step per trial on the
  BN affine parameters, minimising the prediction's entropy.
- T-TIME (Li et al. 2023): incremental Euclidean alignment plus information maximisation
  (conditional entropy minus marginal entropy over a sliding window of recent trials) with a
  gradient step per trial. The paper ensembles several source models; this runs one.
"""
from __future__ import annotations

import copy
from collections import deque

import numpy as np
import torch
from torch import nn

from edgert.methods.btta_dg.align import IncrementalAlignment
from edgert.methods.btta_dg.model import SincAdaptNet


def _norms(model: nn.Module) -> list[nn.BatchNorm2d]:
    return [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]


def _cumulative_bn(model: SincAdaptNet) -> SincAdaptNet:
    """A copy whose BN layers re-estimate statistics as a cumulative mean over target trials."""
    model = copy.deepcopy(model).eval()
    for bn in _norms(model):
        bn.reset_running_stats()
        bn.momentum = None
    return model


def _with_target_stats(model: SincAdaptNet, x: torch.Tensor) -> torch.Tensor:
    """Update the BN statistics with `x`, then predict with them (dropout stays off)."""
    for bn in _norms(model):
        bn.train()
    with torch.no_grad():
        model.features(x)
    for bn in _norms(model):
        bn.eval()
    return model(x)


class BNAdapt:
    def __init__(self, model: SincAdaptNet):
        self.model = _cumulative_bn(model)

    def step(self, trial: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return _with_target_stats(self.model, torch.from_numpy(trial[None]))[0].numpy()


def _entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp(min=1e-8))).sum(-1)


class Tent:
    def __init__(self, model: SincAdaptNet, lr: float = 1e-3):
        self.model = _cumulative_bn(model)
        params = [p for bn in _norms(self.model) for p in (bn.weight, bn.bias)]
        for p in self.model.parameters():
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        self.opt = torch.optim.Adam(params, lr=lr)

    def step(self, trial: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(trial[None])
        probs = _with_target_stats(self.model, x)
        loss = _entropy(probs.mean(1)).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return probs[0].detach().numpy()


class TTime:
    """For a decoder trained on aligned source data."""

    def __init__(self, model: SincAdaptNet, lr: float = 1e-4, window: int = 8):
        self.model = copy.deepcopy(model).eval()
        self.align = IncrementalAlignment(model.config["channels"])
        self.recent: deque[torch.Tensor] = deque(maxlen=window)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)

    def step(self, trial: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(self.align(trial)[None])
        with torch.no_grad():
            probs = self.model(x)[0].numpy()
        self.recent.append(x)
        if len(self.recent) > 1:
            p = self.model(torch.cat(list(self.recent))).mean(1)
            loss = _entropy(p).mean() - _entropy(p.mean(0))
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        return probs
