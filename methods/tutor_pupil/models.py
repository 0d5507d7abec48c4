"""The three learners around a case: the Tutor (corrects the Pupil's inputs), the residual
model (adds to the Pupil's output) and the black box (ignores the Pupil). All three use the
same MLP on standardized inputs.

Regression outputs are compared in log space (relative error); classification in logits.
"""
from __future__ import annotations

import torch
from torch import nn

from edgert.methods.tutor_pupil.cases import Pupil


def mlp(n_in: int, n_out: int, hidden: int) -> nn.Sequential:
    net = nn.Sequential(nn.Linear(n_in, hidden), nn.SiLU(), nn.Linear(hidden, hidden),
                        nn.SiLU(), nn.Linear(hidden, n_out))
    nn.init.zeros_(net[-1].weight)  # every learner starts as the Pupil (or as a constant)
    nn.init.zeros_(net[-1].bias)
    return net


class Learner(nn.Module):
    """`kind` tutor | residual | blackbox around a fixed Pupil; `forward(x)` -> (output,
    correction or None). Output: log answer (regression) or logits (digits)."""

    def __init__(self, kind: str, pupil: Pupil, x_train: torch.Tensor, y_train: torch.Tensor,
                 hidden: int):
        super().__init__()
        self.kind, self.pupil = kind, pupil
        self.classify = pupil.case == "digits"
        self.register_buffer("mean", x_train.mean(0))
        self.register_buffer("std", x_train.std(0).clamp_min(1e-6))
        # the black box's regression output starts at the mean log answer
        self.offset = 0.0 if self.classify else float(torch.log(y_train).mean())
        n_out = 10 if self.classify else 1
        self.net = mlp(x_train.shape[1], len(pupil.inputs) if kind == "tutor" else n_out,
                       hidden)

    def _pupil(self, x: torch.Tensor) -> torch.Tensor:
        out = self.pupil(x)
        return out if self.classify else torch.log(out)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        h = self.net((x - self.mean) / self.std)
        if self.kind == "tutor":
            delta = self.pupil.bound(h)
            return self._pupil(self.pupil.correct(x, delta)), delta
        h = h if self.classify else h.squeeze(-1)
        if self.kind == "residual":
            return self._pupil(x) + h, None
        return h + self.offset, None


def fit(model: Learner, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float,
        weight: float) -> list[float]:
    """Full-batch Adam on task loss + weight * mean squared correction -> loss history."""
    opt = torch.optim.Adam(model.net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    history = []
    for _ in range(steps):
        out, delta = model(x)
        loss = task_loss(model, out, y)
        if delta is not None:
            loss = loss + weight * delta.pow(2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        history.append(float(loss.detach()))
    return history


def task_loss(model: Learner, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if model.classify:
        return nn.functional.cross_entropy(out, y)
    return (out - torch.log(y)).pow(2).mean()
