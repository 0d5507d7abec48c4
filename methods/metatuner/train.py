"""Pretraining the base LM, then tuning it five ways on the downstream queries.

`joint` (MetaTuner): each step scores every candidate prompt under the current LoRA weights,
trains the prompt head towards the best one (the supervised regularisation loss) and the
parameter head with the LM loss under that prompt, through the one shared encoder.
`prompt_only` trains the prompt head alone; `lora_good` / `lora_bad` train one LoRA for all
queries (plain LoRA fine-tuning: the LM sees the context word, the LoRA does not) under the
fixed prompt that suits the training queries best / worst; `sequential` trains the prompt
head first and then the parameter head on the frozen encoder.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from edgert.methods.lm.tiny import pretrain, tiny_gpt2, word_tokenizer
from edgert.methods.metatuner.model import MetaTuner
from edgert.methods.metatuner.simulate import CANDIDATES, CONTEXTS, DIGITS, pretraining_corpus

MODES = ("joint", "prompt_only", "lora_good", "lora_bad", "sequential")


def base_lm(rng: np.random.Generator, steps: int):
    """A 2-block GPT-2 that has learned the four operations behind their prompt words."""
    corpus = pretraining_corpus(20000, rng)
    tok = word_tokenizer(corpus + [" ".join(CANDIDATES + CONTEXTS)])
    lm = tiny_gpt2(tok, layers=2, width=64, context=16)
    pretrain(lm, tok, corpus, steps, batch=64, lr=3e-3, seed=int(rng.integers(1 << 31)))
    for p in lm.parameters():
        p.requires_grad_(False)
    return lm, tok


class Batcher:
    """Token ids of `prompt : x = y` for any prompt choice per query, built from ids."""

    def __init__(self, tok):
        ids = lambda w: tok.convert_tokens_to_ids(w)  # noqa: E731
        self.prompt_ids = torch.tensor([ids(c) for c in CANDIDATES])
        self.digit_ids = torch.tensor([ids(str(d)) for d in range(10)])
        self.context_ids = torch.tensor([ids(c) for c in CONTEXTS])
        self.colon, self.equals = ids(":"), ids("=")

    def ids(self, prompt: torch.Tensor, ctx: torch.Tensor, x: torch.Tensor,
            y: torch.Tensor) -> torch.Tensor:
        """prompt, ctx (B,), x, y (B, DIGITS) -> (B, 4 + 2 DIGITS)."""
        n = prompt.shape[0]
        col = lambda v: torch.full((n, 1), v)  # noqa: E731
        return torch.cat([self.prompt_ids[prompt, None], self.context_ids[ctx, None],
                          col(self.colon), self.digit_ids[x], col(self.equals),
                          self.digit_ids[y]], 1)


def answer_logits(lm, ids: torch.Tensor) -> torch.Tensor:
    """The logits that predict the answer digits: (B, DIGITS, vocab)."""
    return lm(ids).logits[:, -DIGITS - 1:-1]


def query_loss(lm, batcher: Batcher, prompt, ctx, x, y) -> torch.Tensor:
    """Per-query LM loss on the answer digits, (B,)."""
    logits = answer_logits(lm, batcher.ids(prompt, ctx, x, y))
    target = batcher.digit_ids[y]
    return nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none").mean(1)


@torch.no_grad()
def candidate_losses(lm, tuner: MetaTuner, batcher: Batcher, ctx, x, y, lora: bool):
    """(B, candidates): each query's loss under each candidate prompt."""
    weights = tuner.lora(tuner.encode(ctx, x)) if lora else None
    out = []
    with tuner.applied(weights):
        for k in range(len(CANDIDATES)):
            out.append(query_loss(lm, batcher, torch.full_like(ctx, k), ctx, x, y))
    return torch.stack(out, 1)


def fixed_prompts(lm, tuner, batcher, ctx, x, y) -> tuple[int, int]:
    """The single candidate with the lowest and the highest mean loss on these queries."""
    mean = candidate_losses(lm, tuner, batcher, ctx, x, y, lora=False).mean(0)
    return int(mean.argmin()), int(mean.argmax())


def tune(mode: str, lm, batcher: Batcher, train: tuple, steps: int, seed: int,
         reg_weight: float = 1.0, batch: int = 64, lr: float = 3e-3) -> tuple[MetaTuner, dict]:
    """Train a fresh MetaTuner in `mode`; returns it and the fixed prompt (if any)."""
    torch.manual_seed(seed)
    ctx, x, y = (torch.as_tensor(a) for a in train)
    tuner = MetaTuner(lm, len(CONTEXTS), DIGITS, len(CANDIDATES))
    good, bad = fixed_prompts(lm, tuner, batcher, ctx[:2000], x[:2000], y[:2000])
    fixed = {"lora_good": good, "lora_bad": bad}.get(mode)
    opt = torch.optim.Adam(tuner.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for step in range(steps):
        i = torch.randint(len(ctx), (batch,), generator=gen)
        c, xi, yi = ctx[i], x[i], y[i]
        stage = mode if mode != "sequential" else (
            "prompt_only" if step < steps // 2 else "lora_learned")
        if stage == "lora_learned" and step == steps // 2:
            opt = torch.optim.Adam([*tuner.a_head.parameters(), *tuner.b_head.parameters()],
                                   lr=lr)
        h = tuner.encode(c, xi)
        loss = torch.zeros(())
        if stage in ("joint", "prompt_only"):
            best = candidate_losses(lm, tuner, batcher, c, xi, yi,
                                    lora=stage == "joint").argmin(1)
            loss = loss + reg_weight * nn.functional.cross_entropy(tuner.prompt_head(h), best)
        if stage in ("joint", "lora_good", "lora_bad", "lora_learned"):
            if stage == "joint":
                prompt = best
            elif stage == "lora_learned":
                prompt = tuner.prompt_head(h).argmax(1).detach()
            else:
                prompt = torch.full_like(c, fixed)
            with tuner.applied(tuner.lora(tuner.static(len(c)) if fixed is not None else h)):
                loss = loss + query_loss(lm, batcher, prompt, c, xi, yi).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return tuner, {"fixed": fixed}


@torch.no_grad()
def evaluate(mode: str, lm, tuner: MetaTuner, batcher: Batcher, test: tuple,
             fixed: int | None) -> dict[str, np.ndarray]:
    """Per query: exact match of the greedy answer (teacher-forced argmax on every digit is
    the same test) and the prompt used."""
    ctx, x, y = (torch.as_tensor(a) for a in test)
    h = tuner.encode(ctx, x)
    if fixed is not None:
        prompt, weights = torch.full_like(ctx, fixed), tuner.lora(tuner.static(len(ctx)))
    else:
        prompt = tuner.prompt_head(h).argmax(1)
        weights = None if mode == "prompt_only" else tuner.lora(h)
    with tuner.applied(weights):
        pred = answer_logits(lm, batcher.ids(prompt, ctx, x, y)).argmax(-1)
    exact = (pred == batcher.digit_ids[y]).all(1).numpy()
    return {"exact": exact, "prompt": prompt.numpy()}
