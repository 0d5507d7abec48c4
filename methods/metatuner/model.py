"""The meta-tuner: a shared bottom encoder of the query, a prompt head (logits over the
candidate prompts) and a parameter head (a hypernetwork emitting per-query LoRA weights),
and the hooks that add those LoRA weights to a frozen GPT-2."""
from __future__ import annotations

from contextlib import contextmanager

import torch
from torch import nn

# the last block's MLP only: the attention that decides which input digit each answer digit
# copies (the operation) stays the base LM's, so only the prompt can choose it
TARGETS = ("mlp.c_fc", "mlp.c_proj")


class MetaTuner(nn.Module):
    def __init__(self, lm, contexts: int, digits: int, candidates: int, rank: int = 8,
                 hidden: int = 128):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(contexts + 10 * digits, hidden), nn.GELU(),
                                     nn.Linear(hidden, hidden), nn.GELU())
        self.prompt_head = nn.Linear(hidden, candidates)
        self.layers = [lm.transformer.h[-1].get_submodule(t) for t in TARGETS]
        # Conv1D weight is (in, out)
        self.shapes = [tuple(m.weight.shape) for m in self.layers]
        self.rank = rank
        self.a_head = nn.Linear(hidden, sum(i * rank for i, _ in self.shapes))
        self.b_head = nn.Linear(hidden, sum(o * rank for _, o in self.shapes))
        nn.init.zeros_(self.b_head.weight)  # LoRA starts as the identity edit
        nn.init.zeros_(self.b_head.bias)
        self.fixed_input = nn.Parameter(torch.zeros(hidden))  # plain LoRA: one for all queries
        self.contexts, self.digits = contexts, digits

    def encode(self, ctx: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """ctx (B,), x (B, digits) -> (B, hidden)."""
        onehot = [nn.functional.one_hot(ctx, self.contexts)]
        onehot += [nn.functional.one_hot(x[:, i], 10) for i in range(self.digits)]
        return self.encoder(torch.cat(onehot, 1).float())

    def static(self, n: int) -> torch.Tensor:
        """The heads' input for plain LoRA, the same for every query: (n, hidden)."""
        return self.fixed_input.expand(n, -1)

    def lora(self, h: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per target layer: A (B, in, r) and B (B, r, out)."""
        a = self.a_head(h).split([i * self.rank for i, _ in self.shapes], 1)
        b = self.b_head(h).split([o * self.rank for _, o in self.shapes], 1)
        n = h.shape[0]
        return [(ai.view(n, i, self.rank) / i ** 0.5, bi.view(n, self.rank, o))
                for ai, bi, (i, o) in zip(a, b, self.shapes)]

    @contextmanager
    def applied(self, weights: list[tuple[torch.Tensor, torch.Tensor]] | None):
        """Inside the block, each target layer's output gains x A B (per query)."""
        if weights is None:
            yield
            return

        def hook(a, b):
            return lambda mod, inp, out: out + torch.bmm(torch.bmm(inp[0], a), b)

        handles = [m.register_forward_hook(hook(a, b)) for m, (a, b) in zip(self.layers, weights)]
        try:
            yield
        finally:
            for h in handles:
                h.remove()
