"""The scale loop of generation, over three graphs that torch or ONNX Runtime run alike.

`step` (var.Step) gives one scale's guided logits and the grown key/value cache; the tokens
are sampled here (top-k, then top-p); `accumulate` adds the sampled token map's contribution
to the feature map; the next scale's input is that map pooled to its size; `decode` draws an
image from a feature map (after every scale, for the coarse-to-fine strip). Each graph is a
callable dict[str, ndarray] -> dict[str, ndarray], so the live node runs ONNX bundles and
evaluation runs the torch modules through the same code.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from edgert.methods.avde.var import VAR, Step
from edgert.methods.avde.vqvae import MultiScaleVQ

Graph = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


class Accumulate(nn.Module):
    """f_hat (1, dim, side, side) + the contribution of token map index (1, s, s)."""

    def __init__(self, vq: MultiScaleVQ):
        super().__init__()
        self.vq = vq

    def forward(self, f_hat: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return f_hat + self.vq.lift(index).reshape(f_hat.shape)  # keeps the output's shape fixed


class Decode(nn.Module):
    """f_hat (B, dim, side, side) -> images (B, 3, H, W) in [0, 1]."""

    def __init__(self, vq: MultiScaleVQ):
        super().__init__()
        self.vq = vq

    def forward(self, f_hat: torch.Tensor) -> torch.Tensor:
        return self.vq.decoder(f_hat)


STEP_INPUTS = ("cond", "inputs", "positions", "cache", "guidance")
STEP_OUTPUTS = ("logits", "cache_out")


def torch_graph(module: nn.Module, inputs: tuple[str, ...], outputs: tuple[str, ...]) -> Graph:
    """A torch module as a graph callable."""

    @torch.no_grad()
    def run(feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = module(*(torch.from_numpy(np.asarray(feed[n])) for n in inputs))
        result = result if isinstance(result, tuple) else (result,)
        return {n: r.numpy() for n, r in zip(outputs, result)}

    return run


@dataclass
class Sampling:
    cfg: float = 2.0  # guidance at the last scale; ramped linearly from 0 at the first
    top_k: int = 40
    top_p: float = 0.9
    seed: int | None = 0


def sample(logits: np.ndarray, top_k: int, top_p: float, rng: np.random.Generator) -> np.ndarray:
    """One token per row of (n, codes) logits, from the top-k, then the top-p nucleus."""
    k = min(top_k, logits.shape[1])
    order = np.argsort(-logits, axis=1)[:, :k]
    best = np.take_along_axis(logits, order, 1)
    p = np.exp(best - best[:, :1])
    p /= p.sum(1, keepdims=True)
    keep = np.cumsum(p, 1) - p < top_p
    p = np.where(keep, p, 0.0)
    p /= p.sum(1, keepdims=True)
    pick = (np.cumsum(p, 1) < rng.random((len(p), 1))).sum(1).clip(0, k - 1)
    return order[np.arange(len(order)), pick]


@dataclass
class Generated:
    image: np.ndarray  # (3, H, W)
    scales: list[np.ndarray] = field(default_factory=list)  # the image after each scale
    seconds: list[float] = field(default_factory=list)  # each scale's step, sample, accumulate


class Generator:
    """Runs the scale loop; `shape` holds depth, heads, head dim, feature dim, side, scales."""

    def __init__(self, step: Graph, accumulate: Graph, decode: Graph, shape: dict,
                 sampling: Sampling | None = None):
        self.step, self.accumulate, self.decode = step, accumulate, decode
        self.shape = shape
        self.sampling = sampling or Sampling()
        self.rng = np.random.default_rng(self.sampling.seed)

    @classmethod
    def from_torch(cls, var: VAR, vq: MultiScaleVQ, sampling: Sampling | None = None
                   ) -> "Generator":
        return cls(torch_graph(Step(var).eval(), STEP_INPUTS, STEP_OUTPUTS),
                   torch_graph(Accumulate(vq).eval(), ("f_hat", "index"), ("f_hat_out",)),
                   torch_graph(Decode(vq).eval(), ("f_hat",), ("image",)),
                   shape_of(var, vq), sampling)

    def __call__(self, cond: np.ndarray, every_scale: bool = False) -> Generated:
        """cond (cond_dim,) -> the generated image (and, if asked, each scale's)."""
        s = self.shape
        scales, side, dim = s["scales"], s["side"], s["dim"]
        cache = np.zeros((s["depth"], 2, 2, s["heads"], 0, s["head_dim"]), np.float32)
        f_hat = np.zeros((1, dim, side, side), np.float32)
        feed_cond = np.asarray(cond, np.float32).reshape(1, -1)
        out = Generated(image=np.zeros(0))
        start = 0
        for k, size in enumerate(scales):
            t0 = time.perf_counter()
            n = size * size
            inputs = (np.zeros((1, 1, dim), np.float32) if k == 0 else
                      pool(f_hat, size).reshape(1, dim, n).transpose(0, 2, 1).copy())
            ramp = self.sampling.cfg * k / max(len(scales) - 1, 1)
            result = self.step({"cond": feed_cond, "inputs": inputs,
                                "positions": np.arange(start, start + n, dtype=np.int64),
                                "cache": cache, "guidance": np.array([ramp], np.float32)})
            cache = result["cache_out"]
            index = sample(result["logits"][0], self.sampling.top_k, self.sampling.top_p,
                           self.rng).reshape(1, size, size).astype(np.int64)
            f_hat = self.accumulate({"f_hat": f_hat, "index": index})["f_hat_out"]
            if every_scale or k == len(scales) - 1:
                out.scales.append(self.decode({"f_hat": f_hat})["image"][0])
            out.seconds.append(time.perf_counter() - t0)
            start += n
        out.image = out.scales[-1]
        return out


def pool(f_hat: np.ndarray, size: int) -> np.ndarray:
    """Average-pool (1, dim, side, side) to (1, dim, size, size), as the VQ-VAE pools."""
    _, dim, side, _ = f_hat.shape
    r = side // size
    return f_hat.reshape(1, dim, size, r, size, r).mean((3, 5))


def shape_of(var: VAR, vq: MultiScaleVQ) -> dict:
    c = var.config
    return {"depth": c["depth"], "heads": c["heads"], "head_dim": c["width"] // c["heads"],
            "dim": vq.config["dim"], "side": vq.side, "scales": list(vq.scales)}
