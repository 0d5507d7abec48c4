"""Training a topographic network for digit recognition, and reading its sheet."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from edgert.methods.microstimulation.data import augment
from edgert.methods.microstimulation.model import SpatialLoss, TopoNet


def fit(x: torch.Tensor, y: torch.Tensor, seed: int, side: int, width: int, epochs: int,
        spatial_weight: float, batch: int = 128, lr: float = 2e-3) -> TopoNet:
    """Cross-entropy + spatial_weight * spatial loss on augmented batches; eval mode."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = TopoNet(side=side, width=width, image=x.shape[-1])
    spatial = SpatialLoss(model.positions)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        model.train()
        for idx in torch.randperm(len(x), generator=gen).split(batch):
            logits, a = model(augment(x[idx], gen))
            loss = F.cross_entropy(logits, y[idx])
            if spatial_weight:
                loss = loss + spatial_weight * spatial(a)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def sheet_activity(model: TopoNet, x: torch.Tensor) -> np.ndarray:
    """(images, units) responses of the sheet."""
    return model(x)[1].numpy()
