"""Next-scale prediction (VAR) conditioned on an embedding: stage 2 of AVDE.

The condition (an image embedding in training, the EEG's predicted one live), projected, is
both the start token (scale 1's only position) and the condition of every block's adaptive
layer norm. Tokens of a scale attend to all tokens of coarser scales and of their own scale
(a block-causal mask); a tenth of the conditions are replaced by a learned null embedding in
training, so classifier-free guidance can contrast the two at inference. `Step` is one scale
of inference with the key/value cache as explicit input and output: the graph that is
exported to ONNX and run once per scale.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from edgert.methods.avde.vqvae import SCALES


class AdaBlock(nn.Module):
    """Transformer block whose layer norms are scaled, shifted and gated by the condition."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width, elementwise_affine=False)
        self.norm2 = nn.LayerNorm(width, elementwise_affine=False)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(width, 6 * width))
        nn.init.zeros_(self.ada[1].weight)
        nn.init.zeros_(self.ada[1].bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, mask: torch.Tensor | None = None,
                past: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, n, W), cond (B, W), past keys/values (B, heads, L, W / heads) -> x and this
        block's keys/values over past + x."""
        b, n, w = x.shape
        g1, s1, b1, g2, s2, b2 = self.ada(cond)[:, None].chunk(6, -1)
        h = self.norm1(x) * (1 + s1) + b1
        q, k, v = self.qkv(h).view(b, n, 3, self.heads, w // self.heads).transpose(1, 3).unbind(2)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + (1 + g1) * self.proj(att.transpose(1, 2).reshape(b, n, w))
        x = x + (1 + g2) * self.mlp(self.norm2(x) * (1 + s2) + b2)
        return x, k, v


def levels(scales: tuple[int, ...]) -> torch.Tensor:
    """The scale index of every token position, (L,)."""
    return torch.cat([torch.full((s * s,), k) for k, s in enumerate(scales)])


class VAR(nn.Module):
    def __init__(self, codes: int = 256, dim: int = 32, cond_dim: int = 64, width: int = 96,
                 depth: int = 3, heads: int = 4, scales: tuple[int, ...] = SCALES,
                 cond_drop: float = 0.1):
        super().__init__()
        self.config = dict(codes=codes, dim=dim, cond_dim=cond_dim, width=width, depth=depth,
                           heads=heads, scales=tuple(scales), cond_drop=cond_drop)
        self.scales = tuple(scales)
        self.cond_proj = nn.Linear(cond_dim, width)
        self.null = nn.Parameter(torch.zeros(cond_dim))
        self.start = nn.Parameter(torch.zeros(1, 1, width))
        self.word = nn.Linear(dim, width)
        length = sum(s * s for s in scales)
        self.pos = nn.Parameter(torch.randn(length, width) * 0.02)
        self.level = nn.Embedding(len(scales), width)
        self.blocks = nn.ModuleList(AdaBlock(width, heads) for _ in range(depth))
        self.head_norm = nn.LayerNorm(width, elementwise_affine=False)
        self.head_ada = nn.Sequential(nn.SiLU(), nn.Linear(width, 2 * width))
        self.head = nn.Linear(width, codes)
        lv = levels(self.scales)
        self.register_buffer("levels", lv, persistent=False)
        self.register_buffer("mask", lv[:, None] >= lv[None, :], persistent=False)

    def out(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        scale, shift = self.head_ada(cond)[:, None].chunk(2, -1)
        return self.head(self.head_norm(x) * (1 + scale) + shift)

    def forward(self, cond: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits of every token (B, L, codes) from the condition (B, cond_dim)
        and the next-scale inputs (B, L - 1, dim); drops conditions while training."""
        if self.training:
            drop = torch.rand(len(cond), device=cond.device) < self.config["cond_drop"]
            cond = torch.where(drop[:, None], self.null.expand_as(cond), cond)
        h = self.cond_proj(cond)
        x = torch.cat([h[:, None] + self.start, self.word(inputs)], 1)
        x = x + self.pos + self.level(self.levels)
        for block in self.blocks:
            x, _, _ = block(x, h, self.mask)
        return self.out(x, h)


class Step(nn.Module):
    """One scale of guided inference with an explicit key/value cache.

    cond (1, cond_dim); inputs (1, n, dim), the next-scale input (ignored at scale 0, where the
    start token stands); positions (n,) token positions; cache (depth, 2, 2, heads, L, W/heads)
    of the L tokens before, for the conditional and the null row; guidance (1,) the CFG
    weight t of this scale. -> logits (1, n, codes) = (1 + t) cond - t null, and the cache
    over L + n tokens.
    """

    def __init__(self, var: VAR):
        super().__init__()
        self.var = var

    def forward(self, cond: torch.Tensor, inputs: torch.Tensor, positions: torch.Tensor,
                cache: torch.Tensor, guidance: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        var = self.var
        h = var.cond_proj(torch.cat([cond, var.null[None]], 0))  # (2, W)
        first = (positions == 0).to(h.dtype)[None, :, None]
        x = first * (h[:, None] + var.start) + (1 - first) * var.word(inputs).expand(2, -1, -1)
        x = x + var.pos[positions] + var.level(var.levels[positions])
        caches = []
        for k, block in enumerate(var.blocks):
            x, keys, values = block(x, h, None, (cache[k, 0], cache[k, 1]))
            caches.append(torch.stack([keys, values]))
        logits = var.out(x, h)
        guided = (1 + guidance) * logits[:1] - guidance * logits[1:]
        return guided, torch.stack(caches)


def train_var(var: VAR, conds: torch.Tensor, targets: torch.Tensor, inputs: torch.Tensor,
              steps: int, seed: int = 0, noise: float = 0.0, advance=None) -> VAR:
    """Cross-entropy of every scale's tokens; `noise` (std) perturbs the conditions so the
    model tolerates the error of EEG-predicted ones."""
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(var.parameters(), 2e-3, weight_decay=0.05)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / warm) * 0.5 * (
        1 + math.cos(math.pi * min(k, steps) / steps)))
    gen = torch.Generator().manual_seed(seed)
    var.train()
    for _ in range(steps):
        idx = torch.randint(0, len(conds), (64,), generator=gen)
        cond = conds[idx] + noise * torch.randn(conds[idx].shape, generator=gen)
        logits = var(cond, inputs[idx])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[idx].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if advance:
            advance()
    return var.eval()
