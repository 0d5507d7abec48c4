"""JanusVLN -> one bundle: a single step of the agent with both memories as fixed-shape
inputs and the new frame's keys/values as outputs.

ONNX Runtime runs the graph once per frame; the caller (node.BundleNavigator) writes the
returned keys/values into the cache's slot (memory.KVCache) and feeds the caches back on
the next frame, so nothing of the past is recomputed and the memory never grows.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from edgert.export.bundle import Bundle
from edgert.export.onnx_export import export_bundle
from edgert.methods.cache import cached_bundle as shared_cached_bundle
from edgert.methods.cache import cached_checkpoint
from edgert.methods.janusvln.episodes import ACTIONS, MAX_WORDS, WORDS, episodes, split
from edgert.methods.janusvln.env import NavEnv
from edgert.methods.janusvln.model import Agent
from edgert.methods.janusvln.navigate import Navigator, frame_tensor
from edgert.methods.janusvln.simulate import SIZE
from edgert.methods.janusvln.train import Config, load, train

QUICK_MINUTES = 4.5  # `edgert train janusvln --quick` on 2 cores
OUTPUTS = ("logits", "semantic_new", "geometric_new")


class StepGraph(nn.Module):
    """One frame through both encoders against their caches, then the policy."""

    def __init__(self, agent: Agent):
        super().__init__()
        if agent.geometry is None or agent.explicit or agent.memory.slots is None:
            raise ValueError("only a fixed-size dual-memory agent exports as one step graph")
        self.agent = agent

    def forward(self, frame, words, previous, semantic_kv, semantic_valid, geometric_kv,
                geometric_valid):
        """frame (1, 3, H, W) in [0, 1], words (1, L), previous (1,), caches (layers, 2,
        slots, T, D) with valid (slots,) -> logits (1, 4), new keys/values (layers, 2, T, D)."""
        semantic, semantic_new = self.agent.semantic.step(frame, semantic_kv, semantic_valid)
        geometric, geometric_new = self.agent.geometry.encoder.step(frame, geometric_kv,
                                                                    geometric_valid)
        logits = self.agent.policy(words, self.agent.fused(semantic, geometric), previous)
        return logits, semantic_new, geometric_new


def samples(agent: Agent, steps: int = 12) -> list[dict[str, np.ndarray]]:
    """Real step inputs along an unseen episode (caches filling up), for the parity check."""
    houses = split(0, 1)[1]
    episode = episodes(houses, 1, 7)[0]
    env = NavEnv(houses)
    navigator = Navigator(agent)
    navigator.reset(episode.instruction)
    obs, _ = env.reset(options={"episode": episode})
    out = []
    for _ in range(steps):
        out.append({"frame": frame_tensor(obs["rgb"]).numpy(),
                    "words": navigator.words.numpy(),
                    "previous": np.array([navigator.previous], np.int64),
                    "semantic_kv": navigator.semantic.kv.copy(),
                    "semantic_valid": navigator.semantic.valid.copy(),
                    "geometric_kv": navigator.geometric.kv.copy(),
                    "geometric_valid": navigator.geometric.valid.copy()})
        obs, *_ = env.step(navigator.act(obs["rgb"]) or 1)   # keep walking through STOPs
    return out


def quick(folder: Path) -> Path:
    """The quick training run the demo and a bare `edgert export janusvln` use."""
    return train(folder, quick=True)


def export(out: Path, checkpoint: Path | None = None, fp16: bool = False, int8: bool = False
           ) -> Bundle:
    """Export a trained checkpoint (default: this machine's cached one, trained if absent)."""
    checkpoint = Path(checkpoint or cached_checkpoint("janusvln", quick, QUICK_MINUTES))
    cfg, agents, meta = load(checkpoint)
    return export_agent(agents["janusvln"], cfg, out, checkpoint, meta.get("data", "simulated"),
                        fp16, int8)


def export_agent(agent: Agent, cfg: Config, out: Path, checkpoint: Path | None = None,
                 trained: str = "simulated", fp16: bool = False, int8: bool = False) -> Bundle:
    """The step graph of a dual-memory agent as a bundle, checked on real steps."""
    real = samples(agent)
    semantic, geometric = agent.semantic, agent.geometry.encoder
    preprocessing = {
        "input": f"RGB frame ({SIZE}, {SIZE}, 3) uint8 -> (1, 3, H, W) float in [0, 1]",
        "janusvln": {"size": SIZE, "words": list(WORDS), "max_words": MAX_WORDS,
                     "actions": list(ACTIONS), "sinks": cfg.sinks, "window": cfg.window,
                     "lambda": cfg.lam,
                     "semantic": [len(semantic.blocks), semantic.tokens, semantic.width],
                     "geometric": [len(geometric.blocks), geometric.tokens, geometric.width],
                     "trained": trained},
    }
    example = {k: torch.from_numpy(v) for k, v in real[-1].items()}
    return export_bundle(StepGraph(agent).eval(), example, out, name="janusvln",
                         output_names=list(OUTPUTS), labels=list(ACTIONS),
                         preprocessing=preprocessing, checkpoint=checkpoint,
                         real_samples=real[::3], tolerance=1e-3, fp16=fp16, int8=int8)


def cached_bundle() -> Path:
    """The bundle the demo runs: this machine's own, else the shipped one, else trained now."""
    return shared_cached_bundle("janusvln", quick, lambda out, ckpt: export(out, ckpt),
                                QUICK_MINUTES)
