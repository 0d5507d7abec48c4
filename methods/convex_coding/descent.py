"""The non-convex baseline: gradient descent (Adam) on activities Z and readout (W, b) of the
same objective, projected to Z >= 0 for non-negative codes, from a random start or from given
activities (polishing those recovered from the convex Q)."""
from __future__ import annotations

import numpy as np
import torch

from edgert.methods.threads import one_thread


def descend(x: np.ndarray, gamma: float, energy: float, units: int, nonneg: bool,
            seed: int, steps: int, lr: float, init: np.ndarray | None = None) -> np.ndarray:
    """Activities Z (units x stimuli) after `steps` of Adam on
    ||X - W Z - b||^2 + gamma ||W||^2 + energy ||Z||^2 (per stimulus), starting from `init`
    (units x stimuli) if given."""
    with one_thread():
        gen = torch.Generator().manual_seed(seed)
        xt = torch.as_tensor(x, dtype=torch.float64)
        d, t = xt.shape
        z = (torch.randn(units, t, generator=gen, dtype=torch.float64).abs() if init is None
             else torch.as_tensor(init, dtype=torch.float64).clone()).requires_grad_()
        w = (0.5 * torch.randn(d, units, generator=gen, dtype=torch.float64)).requires_grad_()
        b = torch.zeros(d, 1, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.Adam([z, w, b], lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            cost = (((xt - w @ z - b) ** 2).sum() + gamma * (w ** 2).sum()
                    + energy * (z ** 2).sum()) / t
            cost.backward()
            opt.step()
            if nonneg:
                with torch.no_grad():
                    z.clamp_(min=0.0)
        return z.detach().numpy()
