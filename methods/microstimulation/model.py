"""The topographic network (TDANN-style): a small CNN whose last hidden layer is a cortical
sheet, each unit with a fixed 2-D position, trained with cross-entropy plus a spatial
correlation loss that asks the response correlation of every unit pair to follow the inverse
of their cortical distance (Margalit et al. 2024's relative spatial loss)."""
from __future__ import annotations

import torch
from torch import nn


def sheet_positions(side: int) -> torch.Tensor:
    """(side * side, 2) grid positions, one unit per grid point, spacing 1."""
    rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
    return torch.stack([rows.flatten(), cols.flatten()], 1).float()


class TopoNet(nn.Module):
    """conv-pool-conv-pool -> sheet (side x side rectified units) -> class logits."""

    def __init__(self, side: int = 16, width: int = 16, classes: int = 10, image: int = 16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten())
        # batch norm before the rectifier keeps every sheet unit responsive (without it a
        # third of the sheet dies in training and stimulating there does nothing)
        self.sheet = nn.Sequential(nn.Linear(2 * width * (image // 4) ** 2, side * side),
                                   nn.BatchNorm1d(side * side), nn.ReLU())
        self.head = nn.Linear(side * side, classes)
        self.register_buffer("positions", sheet_positions(side))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits, sheet activity)."""
        a = self.sheet(self.features(x))
        return self.head(a), a


class SpatialLoss(nn.Module):
    """1 - Pearson r, over all unit pairs, between response correlation (across the batch)
    and 1 / (distance + 1): nearby units should respond alike, far ones need not. The relative
    form leaves the overall level of correlation free, so it does not fight the task loss."""

    def __init__(self, positions: torch.Tensor):
        super().__init__()
        pairs = torch.triu_indices(len(positions), len(positions), offset=1)
        self.register_buffer("pairs", pairs)
        dist = (positions[pairs[0]] - positions[pairs[1]]).norm(dim=1)
        self.register_buffer("target", _centred(1.0 / (dist + 1.0)))

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        z = (a - a.mean(0)) / (a.std(0) + 1e-6)
        corr = (z.T @ z / (len(a) - 1))[self.pairs[0], self.pairs[1]]
        return 1.0 - (_centred(corr) * self.target).sum()


def _centred(v: torch.Tensor) -> torch.Tensor:
    """Zero mean, unit norm: the dot product of two such vectors is their Pearson r."""
    v = v - v.mean()
    return v / (v.norm() + 1e-12)
