"""The policy: a small GPT-2 trained from scratch here by supervised fine-tuning (trl
`SFTTrainer`, loss on the story and the answer: a policy this small learns to read stories
only from the story tokens too) and GRPO (trl `GRPOTrainer`, a LoRA adapter from
peft) with rewards for each right link, for a whole right chain, and for a chain that agrees
with itself (the intent is where the person believes the object is)."""
from __future__ import annotations

from pathlib import Path

from edgert.methods.r3bench.simulate import LINKS, Scenario, chain_answer, chain_prompt, \
    read_answer


def _dataset(scenarios: list[Scenario]):
    from datasets import Dataset

    return Dataset.from_dict({"prompt": [chain_prompt(s) for s in scenarios],
                              "completion": [chain_answer(s) for s in scenarios],
                              "answers": [[s.answers[k] for k in LINKS] for s in scenarios]})


def sft(model, tokenizer, train: list[Scenario], steps: int, out: Path, seed: int,
        lr: float = 2e-3):
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(out), max_steps=steps, per_device_train_batch_size=32,
                     learning_rate=lr, lr_scheduler_type="cosine", warmup_steps=steps // 10,
                     logging_steps=max(1, steps // 20), save_strategy="no", report_to="none",
                     seed=seed, use_cpu=True, dataloader_num_workers=0,
                     disable_tqdm=True, completion_only_loss=False, bf16=False)
    trainer = SFTTrainer(model=model, args=args, processing_class=tokenizer,
                         train_dataset=_dataset(train).remove_columns("answers"))
    trainer.train()
    return trainer.model.eval()


def link_reward(completions: list[str], answers: list[list[str]], **_) -> list[float]:
    """Per completion: the share of right links."""
    out = []
    for text, truth in zip(completions, answers):
        said = read_answer(text)
        out.append(sum(said[link] == t for link, t in zip(LINKS, truth)) / len(LINKS))
    return out


def chain_reward(completions: list[str], answers: list[list[str]], **_) -> list[float]:
    """Per completion: the share of right links, +1 for a whole right chain, +0.5 when the
    intent names the believed place (consistency, whether or not both are right)."""
    out = []
    for text, truth, links in zip(completions, answers, link_reward(completions, answers)):
        said = read_answer(text)
        consistent = said["belief"] == said["intent"] != ""
        out.append(links + float(links == 1.0) + 0.5 * consistent)
    return out


def grpo(model, tokenizer, train: list[Scenario], steps: int, out: Path, seed: int,
         lora_rank: int, lr: float = 1e-3, generations: int = 8, reward: str = "chain"):
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir=str(out), max_steps=steps, per_device_train_batch_size=32,
                      num_generations=generations, max_completion_length=2 * len(LINKS) + 1,
                      learning_rate=lr, beta=0.0, temperature=1.0, logging_steps=max(1, steps // 20),
                      save_strategy="no", report_to="none", seed=seed, use_cpu=True,
                      disable_tqdm=True, bf16=False)
    peft_config = (LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank,
                              target_modules=["c_attn", "c_proj", "c_fc"], task_type="CAUSAL_LM")
                   if lora_rank else None)
    trainer = GRPOTrainer(model=model, args=args, processing_class=tokenizer,
                          reward_funcs=chain_reward if reward == "chain" else link_reward,
                          peft_config=peft_config,
                          train_dataset=_dataset(train).remove_columns("completion"))
    trainer.train()
    rewards = [r["reward"] for r in trainer.state.log_history if "reward" in r]
    model = trainer.model.eval()
    return (model.merge_and_unload() if lora_rank else model), rewards
