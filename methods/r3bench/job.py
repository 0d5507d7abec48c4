"""One cell of the r3bench job: train a small policy from scratch by SFT, then GRPO from that
checkpoint twice (chain-consistency reward, and per-link reward only), scoring each on the
benchmark split; or, with `lm`, score any LM there (a transformers folder or an
OpenAI-compatible URL) and train nothing.

Metrics, per stage `sft`, `grpo_chain`, `grpo_links` (or `lm`): `<stage>_question` (share of
questions answered right), `<stage>_chain` (share of scenarios with every link right),
`<stage>_gap` (their difference), `<stage>_<link>` (accuracy per link) and
`<stage>_consistent` (the intent names the believed place, right or wrong).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from pydantic import BaseModel, Field

from edgert.methods.lm.models import LM, open_lm, quiet
from edgert.methods.lm.tiny import save, tiny_gpt2, word_tokenizer
from edgert.methods.r3bench.simulate import LINKS, chain_prompt, read_answer, split, vocabulary
from edgert.methods.threads import one_thread


class Config(BaseModel):
    sft_steps: int = Field(1000, ge=1)
    grpo_steps: int = Field(100, ge=0)
    grpo_lr: float = Field(5e-4, gt=0)
    lora_rank: int = Field(0, ge=0)
    layers: int = Field(2, ge=1)
    width: int = Field(128, ge=16)
    n_train: int = Field(8000, ge=10)
    n_bench: int = Field(150, ge=10)
    lm: str | None = None


def grid(quick: bool) -> list[dict]:
    """One policy per seed; the full grid also trains a longer SFT and a LoRA GRPO."""
    if quick:
        return [Config().model_dump()]
    return [Config(sft_steps=s, grpo_steps=300, n_bench=500, lora_rank=r).model_dump()
            for s in (1500, 4000) for r in (0, 16)]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    with one_thread():
        return _run(cfg, seed, out)


def score(lm: LM, bench) -> tuple[dict[str, float], list[str]]:
    answers = lm.generate([chain_prompt(s) for s in bench], 2 * len(LINKS) + 1)
    said = [read_answer(a) for a in answers]
    right = np.array([[d[k] == s.answers[k] for k in LINKS] for d, s in zip(said, bench)])
    out = {"question": right.mean(), "chain": right.all(1).mean()}
    out["gap"] = out["question"] - out["chain"]
    out |= {k: right[:, i].mean() for i, k in enumerate(LINKS)}
    out["consistent"] = np.mean([d["belief"] == d["intent"] != "" for d in said])
    return {k: float(v) for k, v in out.items()}, answers


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    from transformers import AutoModelForCausalLM

    from edgert.methods.r3bench.train import grpo, sft

    quiet()
    bench = split(cfg.n_bench, 10_000 + seed, (0, 3))
    metrics, samples = {}, {}

    def record(stage: str, lm: LM) -> None:
        scores, answers = score(lm, bench)
        metrics.update({f"{stage}_{k}": v for k, v in scores.items()})
        samples[stage] = [chain_prompt(s) + " ->" + a for s, a in zip(bench[:5], answers)]

    if cfg.lm:
        record("lm", open_lm(cfg.lm))
    else:
        torch.manual_seed(seed)
        train = split(cfg.n_train, seed, (0, 1))
        tok = word_tokenizer(vocabulary())
        policy = sft(tiny_gpt2(tok, cfg.layers, cfg.width), tok, train, cfg.sft_steps,
                     out / "sft", seed)
        record("sft", open_lm(save(policy, tok, out / "sft" / "model")))
        for reward in ("chain", "links"):
            start = AutoModelForCausalLM.from_pretrained(out / "sft" / "model")
            tuned, rewards = grpo(start, tok, train, cfg.grpo_steps, out / reward, seed,
                                  cfg.lora_rank, cfg.grpo_lr, reward=reward)
            record(f"grpo_{reward}", open_lm(save(tuned, tok, out / reward / "model")))
            metrics[f"grpo_{reward}_reward_gain"] = float(np.mean(rewards[-5:]) -
                                                          np.mean(rewards[:5]))
    (out / "samples.json").write_text(json.dumps(samples, indent=1))
    return metrics
