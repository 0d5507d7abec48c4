"""The metatuner job: the per-query LoRA hooks, the tasks' ground truth, and tiny cells
through the runner."""
import numpy as np
import pytest
import torch

pytest.importorskip("transformers")

from edgert.methods.lm.tiny import tiny_gpt2, word_tokenizer
from edgert.methods.metatuner.model import MetaTuner
from edgert.methods.metatuner.simulate import CANDIDATES, CONTEXTS, OPS, TASKS, apply, \
    best_prompt, queries
from edgert.runtime.batch import run_batch
from edgert.runtime.methods import find


def test_the_tasks_follow_their_operation_and_shift():
    x = np.array([[3, 1, 4, 2]])
    assert apply("reverse", x).tolist() == [[2, 4, 1, 3]]
    assert apply("sort", x).tolist() == [[1, 2, 3, 4]]
    assert apply("swap", x).tolist() == [[1, 3, 2, 4]]
    ctx, x, y = queries(500, np.random.default_rng(0))
    for c in range(len(CONTEXTS)):
        op, shift = TASKS[CONTEXTS[c]]
        np.testing.assert_array_equal(y[ctx == c], (apply(op, x[ctx == c]) + shift) % 10)
    assert {CANDIDATES[i] for i in best_prompt(ctx)} == set(OPS)


def test_lora_starts_as_no_edit_and_edits_each_query_with_its_own_weights():
    tok = word_tokenizer(["reverse alpha : 1 2 3 4 = 4 3 2 1"] + [" ".join(CANDIDATES + CONTEXTS)])
    lm = tiny_gpt2(tok, width=32).eval()
    tuner = MetaTuner(lm, len(CONTEXTS), 4, len(CANDIDATES), rank=2, hidden=16)
    ids = torch.randint(3, len(tok), (2, 6))
    ctx, x = torch.tensor([0, 1]), torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    plain = lm(ids).logits
    with tuner.applied(tuner.lora(tuner.encode(ctx, x))):
        torch.testing.assert_close(lm(ids).logits, plain)
    torch.nn.init.normal_(tuner.b_head.weight)
    weights = tuner.lora(tuner.encode(ctx, x))
    weights = [(a, b * torch.tensor([0.0, 1.0])[:, None, None]) for a, b in weights]
    with tuner.applied(weights):
        edited = lm(ids).logits
    torch.testing.assert_close(edited[0], plain[0])
    assert not torch.allclose(edited[1], plain[1])
    torch.testing.assert_close(lm(ids).logits, plain)  # the hooks are gone


def test_tiny_cells_through_the_runner(tmp_path):
    small = {"steps": 80, "pretrain_steps": 450, "n_train": 800}
    configs = [{"mode": m} | small for m in ("joint", "prompt_only")]
    result = run_batch("metatuner", configs, seeds=1, out=tmp_path, workers=2)
    assert not result["failed"], result["failed"]
    by = {e["config"]["mode"]: {k: v["mean"] for k, v in e["metrics"].items()}
          for e in result["summary"].values()}
    assert by["joint"]["base_op_acc"] > 0.3, "the base LM learned its operations (chance: 1e-4)"
    assert by["joint"]["prompt_acc"] > 0.5 and by["prompt_only"]["prompt_acc"] > 0.5
    assert by["prompt_only"]["acc_shift"] < 0.05, "a prompt alone cannot add one"
    assert find("metatuner").figures(result, tmp_path) == [tmp_path / "metatuner.modes.png"]
    assert (tmp_path / "metatuner.modes.png").stat().st_size > 5000
