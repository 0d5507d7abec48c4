"""JanusVLN's networks: two causal frame encoders with key/value memory, the 2x2 merge of
geometric tokens, and the policy over instruction and fused visual tokens.

Every attention layer keeps its keys and values: a new frame attends to the cached frames'
keys/values and to itself, then its own keys/values join the cache; nothing of the past is
recomputed. Which past frames a frame may see is the memory's rule (`Memory.allowed`):
JanusVLN keeps the first `sinks` frames and a sliding `window` of recent ones. Training runs a
whole episode at once with that rule as an attention mask, which gives exactly the keys and
values the step-by-step cache holds (a test checks it).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from edgert.methods.janusvln.episodes import ACTIONS, MAX_WORDS, WORDS
from edgert.methods.janusvln.simulate import SIZE

NO_ACTION = len(ACTIONS)   # "previous action" at an episode's first step


@dataclass(frozen=True)
class Memory:
    """Which past frames each frame attends to: the first `sinks` and the last `window`
    (None: all of them)."""

    sinks: int = 2
    window: int | None = 8

    @property
    def slots(self) -> int | None:
        return None if self.window is None else self.sinks + self.window

    def allowed(self, frames: int) -> torch.Tensor:
        """(frames, frames) bool: frame i may attend to frame j."""
        i = torch.arange(frames)[:, None]
        j = torch.arange(frames)[None, :]
        past = j <= i
        if self.window is None:
            return past
        return past & ((j < self.sinks) | (j >= i - self.window))


class Block(nn.Module):
    """Pre-norm attention + MLP whose keys/values are returned, and may be extended by
    `memory` (keys, values of earlier tokens)."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, mask: torch.Tensor,
                memory: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, N, D); memory keys/values (B, M, D); mask (B or 1, N, M + N) bool."""
        q, k, v = self.qkv(self.norm1(x)).chunk(3, -1)
        keys, values = (k, v) if memory is None else (torch.cat([memory[0], k], 1),
                                                      torch.cat([memory[1], v], 1))
        return self._finish(x, self._attend(q, keys, values, mask)), k, v

    def frames(self, x: torch.Tensor, index: torch.Tensor, valid: torch.Tensor
               ) -> torch.Tensor:
        """Every frame of x (B, F, T, D) attending to the K frames `index` (F, K) names for
        it (those `valid` marks): the cost of a window, not of the whole episode."""
        b, f, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, -1)                     # (B, F, T, D)
        keys = k[:, index].flatten(2, 3).flatten(0, 1)                     # (B * F, K * T, D)
        values = v[:, index].flatten(2, 3).flatten(0, 1)
        mask = valid.repeat_interleave(t, 1)[None, :, None].expand(b, f, t, -1)
        out = self._attend(q.flatten(0, 1), keys, values, mask.flatten(0, 1))
        return self._finish(x, out.reshape(b, f, t, d))

    def _attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        out = F.scaled_dot_product_attention(self._split(q), self._split(keys),
                                             self._split(values), attn_mask=mask[:, None])
        return out.transpose(1, 2).flatten(2)

    def _finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        x = x + self.proj(attended)
        return x + self.mlp(self.norm2(x))

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        return t.unflatten(-1, (self.heads, -1)).transpose(1, 2)   # (B, heads, N, D/heads)


class FrameEncoder(nn.Module):
    """RGB frame -> patch tokens, each layer attending to the memory's frames."""

    def __init__(self, patch: int, width: int = 64, layers: int = 2, heads: int = 4):
        super().__init__()
        self.tokens = (SIZE // patch) ** 2
        self.width = width
        self.embed = nn.Conv2d(3, width, patch, patch)
        self.pos = nn.Parameter(torch.randn(self.tokens, width) * 0.02)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)

    def patches(self, frames: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> (B, T, D)."""
        return self.embed(frames * 2 - 1).flatten(2).transpose(1, 2) + self.pos

    def sequence(self, frames: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """A whole episode: frames (B, F, 3, H, W), allowed (F, F) -> tokens (B, F, T, D).
        A frame sees at most K frames (the memory's sinks + window + itself): attention runs
        over those K only, unless K is every frame (full history)."""
        b, f = frames.shape[:2]
        x = self.patches(frames.flatten(0, 1)).reshape(b, f, self.tokens, -1)
        k = int(allowed.sum(1).max())
        if k < f:
            index = allowed.float().topk(k, 1, sorted=False).indices          # (F, K)
            valid = allowed.gather(1, index)
            for block in self.blocks:
                x = block.frames(x, index, valid)
            return self.norm(x)
        x = x.flatten(1, 2)
        mask = allowed.repeat_interleave(self.tokens, 0).repeat_interleave(self.tokens, 1)
        for block in self.blocks:
            x, _, _ = block(x, mask[None])
        return self.norm(x).reshape(b, f, self.tokens, -1)

    def step(self, frame: torch.Tensor, cache: torch.Tensor, valid: torch.Tensor
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """One frame (1, 3, H, W) against the cache (layers, 2, slots, T, D) whose filled
        slots `valid` (slots,) marks -> tokens (1, T, D), this frame's keys/values
        (layers, 2, T, D) for the cache."""
        x = self.patches(frame)
        slots = cache.shape[2]
        seen = valid.bool().repeat_interleave(self.tokens)                    # (slots * T,)
        mask = torch.cat([seen, torch.ones(self.tokens, dtype=torch.bool)])
        mask = mask[None, None].expand(1, self.tokens, (slots + 1) * self.tokens)
        new = []
        for layer, block in enumerate(self.blocks):
            memory = (cache[layer, 0].reshape(1, slots * self.tokens, -1),
                      cache[layer, 1].reshape(1, slots * self.tokens, -1))
            x, k, v = block(x, mask, memory)
            new.append(torch.stack([k[0], v[0]]))
        return self.norm(x), torch.stack(new)


class Geometry(nn.Module):
    """The spatial-geometric encoder (the stand-in for VGGT): a causal frame encoder over
    4-px patches, pretrained to predict each patch's depth and the camera's pose relative to
    the episode's first frame, then frozen."""

    def __init__(self, width: int = 64, layers: int = 2):
        super().__init__()
        self.encoder = FrameEncoder(4, width, layers)
        self.depth = nn.Linear(width, 16)          # log depth of the 4 x 4 pixels
        self.pose = nn.Linear(width, 4)            # dx, dy (in 5 m), cos, sin of dheading

    def heads(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """tokens (..., 64, D) -> log depth (..., 32, 32) and pose (..., 4)."""
        depth = self.depth(tokens).unflatten(-2, (8, 8)).unflatten(-1, (4, 4))
        depth = depth.transpose(-3, -2).flatten(-4, -3).flatten(-2)          # (..., 32, 32)
        return depth, self.pose(tokens.mean(-2))


class Merge(nn.Module):
    """Geometric tokens (B, 64, D) -> (B, 16, D): each 2 x 2 group concatenated, then an MLP,
    so they line up with the semantic tokens they are added to."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(4 * width, width), nn.GELU(), nn.Linear(width, width))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        grid = tokens.unflatten(-2, (4, 2, 4, 2)).transpose(-4, -3)  # (..., 4, 4, 2, 2, D)
        return self.mlp(grid.flatten(-3).flatten(-3, -2))            # (..., 16, 4D) -> D


class Policy(nn.Module):
    """Action logits from the instruction's words, the fused tokens of the current frame,
    the previous action and (explicit memory only) tokens of stored frames."""

    def __init__(self, width: int = 64, layers: int = 2, heads: int = 4, visual: int = 16):
        super().__init__()
        self.words = nn.Embedding(len(WORDS), width, padding_idx=0)
        self.word_pos = nn.Parameter(torch.randn(MAX_WORDS, width) * 0.02)
        self.visual_pos = nn.Parameter(torch.randn(visual, width) * 0.02)
        self.segment = nn.Parameter(torch.randn(3, width) * 0.02)   # words, now, history
        self.previous = nn.Embedding(NO_ACTION + 1, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, len(ACTIONS))

    def forward(self, words: torch.Tensor, visual: torch.Tensor, previous: torch.Tensor,
                history: torch.Tensor | None = None, seen: torch.Tensor | None = None
                ) -> torch.Tensor:
        """words (B, L) ids, visual (B, 16, D), previous (B,) -> logits (B, 4); history
        (B, M, D) with `seen` (B, M) bool marking the stored tokens."""
        parts = [self.previous(previous)[:, None],
                 self.words(words) + self.word_pos[:words.shape[1]] + self.segment[0],
                 visual + self.visual_pos + self.segment[1]]
        keep = [torch.ones_like(previous, dtype=torch.bool)[:, None], words != 0,
                torch.ones(visual.shape[:2], dtype=torch.bool)]
        if history is not None:
            parts.append(history + self.segment[2])
            keep.append(seen)
        x = torch.cat(parts, 1)
        mask = torch.cat(keep, 1)[:, None].expand(-1, x.shape[1], -1)
        for block in self.blocks:
            x, _, _ = block(x, mask)
        return self.head(self.norm(x[:, 0]))


class Agent(nn.Module):
    """A variant of the agent: the semantic encoder, the frozen geometry encoder (its
    tokens merged and added with weight `lam`; none when `lam` is 0), the memory rule both
    encoders keep, and the policy. `explicit`: no encoder memory; the policy instead reads
    every stored frame, re-encoded, pooled to 4 tokens."""

    def __init__(self, geometry: Geometry | None, memory: Memory, lam: float = 0.2,
                 explicit: bool = False, width: int = 64, layers: int = 2):
        super().__init__()
        self.memory, self.lam, self.explicit = memory, lam, explicit
        self.semantic = FrameEncoder(8, width, layers)
        self.geometry = geometry if lam > 0 else None
        if self.geometry is not None:
            self.geometry.requires_grad_(False)
        self.merge = Merge(width)
        self.policy = Policy(width, visual=self.semantic.tokens)

    def fused(self, semantic: torch.Tensor, geometric: torch.Tensor | None) -> torch.Tensor:
        """Semantic tokens (..., 16, D) + lam * merged geometric tokens (..., 64, D)."""
        return semantic if geometric is None else semantic + self.lam * self.merge(geometric)

    def geometric_sequence(self, frames: torch.Tensor, allowed: torch.Tensor
                           ) -> torch.Tensor | None:
        if self.geometry is None:
            return None
        with torch.no_grad():
            return self.geometry.encoder.sequence(frames, allowed)


def pool(tokens: torch.Tensor) -> torch.Tensor:
    """(..., 16, D) tokens of a 4 x 4 grid -> (..., 4, D), 2 x 2 means: how an explicit
    memory stores a past frame."""
    grid = tokens.unflatten(-2, (2, 2, 2, 2)).transpose(-4, -3)      # (..., 2, 2, 2, 2, D)
    return grid.flatten(-3, -2).mean(-2).flatten(-3, -2)
