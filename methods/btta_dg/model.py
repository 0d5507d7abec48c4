"""SincAdaptNet: learnable sinc band-pass filters -> spatial filters -> log-variance over time
-> a class distribution at every time step.

The sinc layer learns each filter's low cut and bandwidth in Hz (Hamming-windowed band-pass,
initialised to tile 4-40 Hz), so what it learned reads as frequency bands. Pooling keeps a time
axis, and the classifier is applied per step: one trial gives a sequence p_1..p_T, which the
Dirichlet projection turns into evidence with a concentration.
"""
from __future__ import annotations

import math

import torch
from torch import nn


class SincConv(nn.Module):
    """`filters` band-pass FIR filters of `kernel` taps, parametrised by low cut and band (Hz)."""

    def __init__(self, filters: int, kernel: int, rate: float, low: float = 4.0,
                 high: float = 40.0, stride: int = 1, min_band: float = 2.0):
        super().__init__()
        if kernel % 2 == 0:
            raise ValueError(f"sinc kernel must have an odd number of taps, got {kernel}")
        edges = torch.linspace(low, high, filters + 1)
        self.low_hz = nn.Parameter(edges[:-1].clone())
        self.band_hz = nn.Parameter(torch.diff(edges))
        self.rate, self.stride, self.min_band = rate, stride, min_band
        half = (kernel - 1) // 2
        self.register_buffer("t", torch.arange(-half, half + 1, dtype=torch.float32) / rate)
        self.register_buffer("window", torch.hamming_window(kernel, periodic=False))

    def bands(self) -> torch.Tensor:
        """(filters, 2) low and high cut in Hz, clamped to (1 Hz, Nyquist)."""
        low = self.low_hz.abs().clamp(min=1.0)
        high = (low + self.min_band + self.band_hz.abs()).clamp(max=self.rate / 2 - 1.0)
        return torch.stack([low, high], 1)

    def kernels(self) -> torch.Tensor:
        """(filters, taps): difference of two windowed sincs, unit gain at the band centre."""
        low, high = self.bands().unbind(1)
        t = self.t[None]
        lowpass = lambda f: 2 * f[:, None] * torch.sinc(2 * f[:, None] * t)  # noqa: E731
        k = (lowpass(high) - lowpass(low)) * self.window / self.rate
        centre = (low + high) / 2
        gain = (k * torch.cos(2 * math.pi * centre[:, None] * t)).sum(1, keepdim=True)
        return k / gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, 1, channels, samples) -> (batch, filters, channels, samples')."""
        weight = self.kernels()[:, None, None, :]
        return nn.functional.conv2d(x, weight, stride=(1, self.stride))


class SincAdaptNet(nn.Module):
    """Input (batch, channels, samples) in uV; output (batch, steps, classes) probabilities.

    `sinc=False` swaps the sinc layer for a plain learned convolution (the ablation).
    """

    def __init__(self, channels: int, samples: int, classes: int, rate: float,
                 filters: int = 16, depth: int = 2, kernel: int | None = None,
                 pool_s: float = 0.4, step_s: float = 0.1, sinc: bool = True,
                 nonlinearity: str = "logvar", dropout: float = 0.25, scale: float = 0.1):
        super().__init__()
        kernel = kernel or 2 * round(0.25 * rate) + 1
        self.stride = max(1, round(rate / 125))
        self.scale = scale
        self.config = dict(channels=channels, samples=samples, classes=classes, rate=rate,
                           filters=filters, depth=depth, kernel=kernel, pool_s=pool_s,
                           step_s=step_s, sinc=sinc, nonlinearity=nonlinearity, dropout=dropout,
                           scale=scale)
        self.temporal = (SincConv(filters, kernel, rate, stride=self.stride) if sinc else
                         nn.Conv2d(1, filters, (1, kernel), stride=(1, self.stride), bias=False))
        self.spatial = nn.Conv2d(filters, filters * depth, (channels, 1), groups=filters,
                                 bias=False)
        self.norm = nn.BatchNorm2d(filters * depth)
        inner = rate / self.stride
        self.pool = nn.AvgPool2d((1, max(1, round(pool_s * inner))),
                                 stride=(1, max(1, round(step_s * inner))))
        if nonlinearity not in ("logvar", "elu"):
            raise ValueError(f"nonlinearity must be 'logvar' or 'elu', got {nonlinearity!r}")
        self.nonlinearity = nonlinearity
        self.dropout = nn.Dropout(dropout)
        self.classify = nn.Conv2d(filters * depth, classes, 1)

    def features(self, eeg: torch.Tensor) -> torch.Tensor:
        """(batch, channels, samples) -> (batch, maps, 1, steps)."""
        x = self.norm(self.spatial(self.temporal(eeg[:, None] * self.scale)))
        if self.nonlinearity == "logvar":
            return torch.log(self.pool(x * x).clamp(min=1e-4))
        return self.pool(nn.functional.elu(x))

    def logits(self, eeg: torch.Tensor) -> torch.Tensor:
        """(batch, steps, classes) logits, one class score vector per time step."""
        return self.classify(self.dropout(self.features(eeg)))[:, :, 0].transpose(1, 2)

    def forward(self, eeg: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.logits(eeg), -1)

    def steps(self) -> int:
        with torch.no_grad():
            return self.logits(torch.zeros(1, self.config["channels"],
                                           self.config["samples"])).shape[1]

    def bands(self) -> torch.Tensor | None:
        """Learned (filters, 2) bands in Hz, or None for the plain-convolution ablation."""
        return self.temporal.bands().detach() if isinstance(self.temporal, SincConv) else None


def bake(model: SincAdaptNet) -> SincAdaptNet:
    """A copy whose sinc layer is a plain convolution holding the learned kernels: the same
    function, in operators every runtime has (what the bundle exports)."""
    config = dict(model.config, sinc=False)
    plain = SincAdaptNet(**config)
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("temporal.")}
    plain.load_state_dict(state, strict=False)
    if isinstance(model.temporal, SincConv):
        with torch.no_grad():
            plain.temporal.weight.copy_(model.temporal.kernels()[:, None, None, :])
    else:
        plain.temporal.load_state_dict(model.temporal.state_dict())
    return plain.eval()
