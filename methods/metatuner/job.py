"""One cell of the metatuner job: pretrain the small base LM, tune it in one mode on the
downstream queries, score the held-out queries.

Metrics: `acc` (exact match of all four answer digits), `acc_plain` / `acc_shift` (the
contexts that need only the right prompt / also the added one), `prompt_acc` (share of
queries whose chosen prompt is their operation's word), `base_op_acc` (the base LM on its
own pretraining operations, a check that pretraining worked).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field

from edgert.methods.metatuner.simulate import CANDIDATES, CONTEXTS, OPS, TASKS, apply, \
    best_prompt, queries
from edgert.methods.metatuner.train import MODES, Batcher, answer_logits, base_lm, evaluate, \
    tune
from edgert.methods.threads import one_thread


class Config(BaseModel):
    """`reg_weight`: the weight of the supervised loss on the best prompt."""

    mode: str = Field("joint", pattern="|".join(MODES))
    steps: int = Field(800, ge=1)
    pretrain_steps: int = Field(1500, ge=1)
    reg_weight: float = Field(1.0, ge=0)
    n_train: int = Field(20000, ge=100)


def grid(quick: bool) -> list[dict]:
    """Every mode; the full grid trains longer."""
    steps = 600 if quick else 3000
    return [Config(mode=m, steps=steps).model_dump() for m in MODES]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    lm, tok = base_lm(rng, cfg.pretrain_steps)
    batcher = Batcher(tok)
    train, test = queries(cfg.n_train, rng), queries(2000, rng)
    tuner, info = tune(cfg.mode, lm, batcher, train, cfg.steps, seed, cfg.reg_weight)
    result = evaluate(cfg.mode, lm, tuner, batcher, test, info["fixed"])
    shift = np.array([TASKS[CONTEXTS[c]][1] for c in test[0]])
    metrics = {"acc": result["exact"].mean(), "acc_plain": result["exact"][shift == 0].mean(),
               "acc_shift": result["exact"][shift == 1].mean(),
               "prompt_acc": (result["prompt"] == best_prompt(test[0])).mean(),
               "base_op_acc": _base_accuracy(lm, batcher, rng)}
    (out / "prompts.json").write_text(json.dumps(
        {CONTEXTS[c]: CANDIDATES[int(np.bincount(result["prompt"][test[0] == c]).argmax())]
         for c in range(len(CONTEXTS))}, indent=1))
    return {k: float(v) for k, v in metrics.items()}


@torch.no_grad()
def _base_accuracy(lm, batcher: Batcher, rng: np.random.Generator) -> float:
    """The base LM alone, each operation behind its own word: exact match."""
    x = rng.integers(0, 10, (400, 4))
    op = rng.integers(0, len(OPS), 400)
    y = np.stack([apply(OPS[o], xi[None])[0] for o, xi in zip(op, x)])
    ctx = torch.as_tensor(rng.integers(0, len(CONTEXTS), 400))
    ids = batcher.ids(torch.as_tensor(op), ctx, torch.as_tensor(x), torch.as_tensor(y))
    pred = answer_logits(lm, ids).argmax(-1)
    return float((pred == batcher.digit_ids[torch.as_tensor(y)]).all(1).float().mean())
