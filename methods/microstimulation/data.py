"""The recognition task: scikit-learn's handwritten digits (real scans that ship offline),
upsampled to 16x16 so the network has room for two conv stages, with mild random affine
augmentation while training."""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SIDE = 16
CLASSES = 10


def digits(seed: int, test_size: float = 0.25
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x_train, y_train, x_test, y_test); images (n, 1, 16, 16) in [0, 1], split stratified."""
    d = load_digits()
    x = torch.from_numpy(d.images.astype(np.float32) / 16.0).unsqueeze(1)
    x = F.interpolate(x, size=(SIDE, SIDE), mode="bilinear", align_corners=False)
    idx = np.arange(len(x))
    train, test = train_test_split(idx, test_size=test_size, random_state=seed,
                                   stratify=d.target)
    y = torch.from_numpy(d.target).long()
    return x[train], y[train], x[test], y[test]


def augment(x: torch.Tensor, gen: torch.Generator, degrees: float = 10.0,
            shift: float = 1.0, zoom: float = 0.1) -> torch.Tensor:
    """Random rotation (+-degrees), translation (+-shift pixels) and scaling (+-zoom): the
    small pose changes that make a recogniser generalise from 1.3 k digits."""
    n = len(x)

    def u() -> torch.Tensor:
        return 2 * torch.rand(n, generator=gen) - 1

    angle = u() * math.radians(degrees)
    scale = 1 + u() * zoom
    move = shift * 2 / x.shape[-1]
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = torch.cos(angle) / scale
    theta[:, 0, 1] = -torch.sin(angle) / scale
    theta[:, 1, 0] = torch.sin(angle) / scale
    theta[:, 0, 2], theta[:, 1, 2] = u() * move, u() * move
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")
