"""An agent run frame by frame, as it runs live: each variant keeps the memory it keeps.

`janusvln`, `semantic_only` and `window_no_sink` hold fixed-size key/value caches (memory.py)
and encode only the new frame; `full_history` keeps every frame and re-encodes them all at
each step; `explicit_memory` keeps every frame and re-encodes each one, pooled, for the
policy to read. `state_bytes` is what a variant holds between steps.
"""
from __future__ import annotations

import numpy as np
import torch

from edgert.methods.janusvln.episodes import tokenize
from edgert.methods.janusvln.memory import KVCache
from edgert.methods.janusvln.model import NO_ACTION, Agent, FrameEncoder, pool


def frame_tensor(rgb: np.ndarray) -> torch.Tensor:
    """(H, W, 3) uint8 -> (1, 3, H, W) float in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(rgb)).permute(2, 0, 1)[None].float() / 255


def cache_for(encoder: FrameEncoder, agent: Agent) -> KVCache:
    return KVCache(len(encoder.blocks), encoder.tokens, encoder.width, agent.memory)


class Navigator:
    """`reset(instruction)` at an episode's start, then `act(rgb)` -> action per frame."""

    def __init__(self, agent: Agent):
        self.agent = agent.eval()
        self.bounded = not agent.explicit and agent.memory.slots is not None

    def reset(self, instruction: str) -> None:
        self.words = torch.from_numpy(tokenize(instruction))[None]
        self.previous = NO_ACTION
        self.frames: list[np.ndarray] = []
        if self.bounded:
            self.semantic = cache_for(self.agent.semantic, self.agent)
            self.geometric = cache_for(self.agent.geometry.encoder, self.agent) \
                if self.agent.geometry is not None else None

    @torch.no_grad()
    def act(self, rgb: np.ndarray) -> int:
        frame = frame_tensor(rgb)
        if self.bounded:
            visual, history = self._cached(frame), None
        else:
            self.frames.append(rgb)
            visual, history = self._reencoded()
        logits = self.agent.policy(self.words, visual, torch.tensor([self.previous]), history,
                                   None if history is None else
                                   torch.ones(history.shape[:2], dtype=torch.bool))
        self.logits = logits[0].numpy()
        self.previous = int(logits.argmax())
        return self.previous

    def _cached(self, frame: torch.Tensor) -> torch.Tensor:
        semantic = self._step(self.agent.semantic, self.semantic, frame)
        geometric = self._step(self.agent.geometry.encoder, self.geometric, frame) \
            if self.geometric is not None else None
        return self.agent.fused(semantic, geometric)

    @staticmethod
    def _step(encoder: FrameEncoder, cache: KVCache, frame: torch.Tensor) -> torch.Tensor:
        tokens, kv = encoder.step(frame, torch.from_numpy(cache.kv),
                                  torch.from_numpy(cache.valid))
        cache.add(kv.numpy())
        return tokens

    def _reencoded(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every stored frame encoded again: as one causal sequence (full history), or each
        on its own and pooled for the policy (explicit memory)."""
        frames = torch.cat([frame_tensor(f) for f in self.frames])[None]   # (1, F, 3, H, W)
        if not self.agent.explicit:
            allowed = self.agent.memory.allowed(frames.shape[1])
            fused = self.agent.fused(self.agent.semantic.sequence(frames, allowed),
                                     self.agent.geometric_sequence(frames, allowed))
            return fused[:, -1], None
        single = torch.ones(1, 1, dtype=torch.bool)
        frames = frames.transpose(0, 1)                                    # (F, 1, 3, H, W)
        fused = self.agent.fused(self.agent.semantic.sequence(frames, single),
                                 self.agent.geometric_sequence(frames, single))[:, 0]
        return fused[-1:], pool(fused[:-1]).reshape(1, -1, fused.shape[-1])

    @property
    def state_bytes(self) -> int:
        if self.bounded:
            return self.semantic.nbytes + (self.geometric.nbytes if self.geometric else 0)
        return sum(f.nbytes for f in self.frames)
