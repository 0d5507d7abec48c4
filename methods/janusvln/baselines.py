"""JanusVLN and the baselines it is measured against (result keys), as agent variants.

- `janusvln`: dual implicit memory, sinks + sliding window in both encoders, lambda 0.2.
- `semantic_only`: lambda 0, no geometric encoder and no geometric memory.
- `full_history`: every frame kept and the whole history re-encoded at each step.
- `window_no_sink`: a sliding window of the same size without the initial frames.
- `explicit_memory`: past frames stored as images and re-encoded each step, each pooled to
  four tokens the policy reads (as methods that keep past images do).
"""
from __future__ import annotations

from edgert.methods.janusvln.model import Agent, Geometry, Memory

VARIANTS = ("janusvln", "semantic_only", "full_history", "window_no_sink", "explicit_memory")


def make_agent(name: str, geometry: Geometry, sinks: int = 2, window: int = 8,
               lam: float = 0.2, width: int = 64, layers: int = 2) -> Agent:
    """The untrained agent of variant `name` around the shared frozen geometry encoder."""
    memories = {"janusvln": Memory(sinks, window), "semantic_only": Memory(sinks, window),
                "full_history": Memory(0, None), "window_no_sink": Memory(0, sinks + window),
                "explicit_memory": Memory(0, 0)}
    if name not in memories:
        raise ValueError(f"unknown JanusVLN variant {name!r}; one of {', '.join(VARIANTS)}")
    return Agent(geometry, memories[name], 0.0 if name == "semantic_only" else lam,
                 explicit=name == "explicit_memory", width=width, layers=layers)
