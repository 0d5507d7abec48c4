"""Training (SGD with momentum, warm-up then cosine, as the paper) and the per-layer probe."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from edgert.methods.ei_snn.model import SpikingNet


def fit(net: SpikingNet, x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float,
        batch: int, seed: int) -> tuple[list[float], bool]:
    """Train in place -> (mean loss per epoch, diverged). Stops at the first non-finite loss."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    steps = epochs * math.ceil(len(x) / batch)
    warm = max(1, steps // 5)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (1 + math.cos(math.pi * k / steps)))
    losses = []
    net.train()
    for _ in range(epochs):
        total = 0.0
        for idx in torch.randperm(len(x), generator=gen).split(batch):
            loss = F.cross_entropy(net(x[idx]), y[idx])
            if not torch.isfinite(loss):
                return losses, True
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            net.clamp()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(x))
    return losses, False


@torch.no_grad()
def probe(net: SpikingNet, x: torch.Tensor, y: torch.Tensor) -> dict[str, np.ndarray | float]:
    """Test accuracy, each hidden layer's firing rate, and for E-I circuits each layer's
    inhibitory / excitatory current ratio and their correlation across samples (how closely
    inhibition tracks excitation: the balance)."""
    net.eval()
    circuits = net.circuits()
    for c in circuits:
        c.probe = {}
    logits = net(x)
    out: dict[str, np.ndarray | float] = {
        "accuracy": float((logits.argmax(1) == y).float().mean()),
        "rates": torch.stack(net.rates).mean(1).numpy(),
    }
    if circuits:
        out["ei_ratio"] = np.array([float(c.probe["inhibit"].mean() /
                                          c.probe["excite"].mean().clamp_min(1e-12))
                                    for c in circuits])
        out["ei_corr"] = np.array([_unit_corr(c.probe["excite"], c.probe["inhibit"])
                                   for c in circuits])
        for c in circuits:
            c.probe = None
    return out


def _unit_corr(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean over units of the correlation across samples of two currents (N, units)."""
    a, b = a - a.mean(0), b - b.mean(0)
    r = (a * b).sum(0) / (a.norm(dim=0) * b.norm(dim=0)).clamp_min(1e-12)
    return float(r.mean())
