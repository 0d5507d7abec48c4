"""The r3bench job: each link of the chain follows from the story, answers are read per link,
the rewards, and a tiny policy trained by trl's SFT and GRPO through the runner, then scored
again through a real local OpenAI-compatible server."""
import numpy as np
import pytest

pytest.importorskip("trl")

from edgert.methods.lm.serve import serving
from edgert.methods.r3bench.simulate import LINKS, chain_answer, read_answer, scenario, split
from edgert.methods.r3bench.train import chain_reward, link_reward
from edgert.runtime.batch import run_batch


def test_each_link_follows_from_the_story():
    for s in split(200, 0, (0, 3)):
        story = s.story
        assert s.answers["desire"] == s.wanted and s.answers["intent"] == s.answers["belief"]
        first = story.split(f"puts {s.wanted} in ")[1].split()[0]
        moved = f"moves {s.wanted} to " in story
        if " leaves ." in story or not moved:
            assert s.answers["belief"] == first
        else:
            assert s.answers["belief"] == story.split(f"moves {s.wanted} to ")[1].split()[0]
        actual = story.split(f"moves {s.wanted} to ")[1].split()[0] if moved else first
        assert s.answers["emotion"] == ("happy" if s.answers["belief"] == actual else "surprised")
    assert len({scenario(np.random.default_rng(i), 0).answers["emotion"] for i in range(40)}) == 2


def test_answers_are_read_per_link_and_rewarded_for_whole_consistent_chains():
    s = split(1, 3, (0, 0))[0]
    truth = [s.answers[k] for k in LINKS]
    assert read_answer(chain_answer(s)) == s.answers
    assert read_answer("wants") == {k: "" for k in LINKS}
    right = chain_answer(s)
    wrong_place = right.replace(f"looks {truth[2]}", "looks nowhere")
    assert link_reward([right, wrong_place], [truth] * 2) == [1.0, 0.75]
    assert chain_reward([right, wrong_place], [truth] * 2) == [2.5, 0.75]


def test_a_tiny_policy_through_sft_and_grpo_and_the_same_scores_through_an_endpoint(tmp_path):
    config = {"sft_steps": 40, "grpo_steps": 2, "layers": 1, "width": 32, "n_train": 200,
              "n_bench": 12, "lora_rank": 4}  # GRPO through a peft LoRA adapter
    result = run_batch("r3bench", [config], seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    cell = result["cells"][0]
    metrics = cell["metrics"]
    for stage in ("sft", "grpo_chain", "grpo_links"):
        assert 0 <= metrics[f"{stage}_chain"] <= metrics[f"{stage}_question"] <= 1
        assert metrics[f"{stage}_gap"] == pytest.approx(
            metrics[f"{stage}_question"] - metrics[f"{stage}_chain"])
    with serving(tmp_path / "cells" / cell["key"] / "sft" / "model") as url:
        again = run_batch("r3bench", [{"lm": url, "n_bench": 12}], seeds=1,
                          out=tmp_path / "lm", workers=1)
    lm = again["cells"][0]["metrics"]
    assert {k: lm[f"lm_{k}"] for k in ("question", "chain", "desire")} == \
        {k: metrics[f"sft_{k}"] for k in ("question", "chain", "desire")}
