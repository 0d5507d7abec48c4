"""BOLT's parts: the tabletop and its questions, option scoring, the distillation losses,
temperature scaling, the metrics, the actions and the budget-aware router."""
import numpy as np
import pytest
import torch

from edgert.methods.bolt import actions as act
from edgert.methods.bolt.data import BROAD, TARGET, generate, split, tensors, views
from edgert.methods.bolt.metrics import ece, risk_coverage, summary
from edgert.methods.bolt.model import build, parameters
from edgert.methods.bolt.questions import NONE, compose, decompositions, parse, paraphrases, truth
from edgert.methods.bolt.router import (Candidates, Router, apply, final, fit_gains, fixed_plans,
                                 random_plans)
from edgert.methods.bolt.scene import BASE, HIGH, view
from edgert.methods.bolt.train import (fit, fit_temperature, lm_loss, odd_loss, probs, scores,
                                teacher_targets, token_kd_loss)


def test_questions_have_three_to_five_options_ending_in_none_of_the_above():
    qa = generate(20, 3, 4, TARGET, 0.3, seed=1)
    assert {q.type for q in qa.questions} == {"yes/no", "arrows", "colors", "letters", "other"}
    for q in qa.questions:
        assert 3 <= len(q.options) <= 5 and q.options[-1] == NONE
        right = truth(q.kind, q.args, qa.frames[q.frame])
        assert q.options[q.answer] == (right if right in q.options else NONE)
    assert 0.05 < np.mean([q.options[q.answer] == NONE for q in qa.questions]) < 0.4
    again = generate(20, 3, 4, TARGET, 0.3, seed=1)
    assert again.questions == qa.questions


def test_small_details_vanish_in_the_base_view():
    qa = generate(5, 2, 1, {"dot": 1}, 0.0, seed=2)
    image = qa.frames[qa.questions[0].frame].image
    hi, lo = view(image, HIGH), view(image, BASE)
    assert hi.shape == (3, HIGH, HIGH) and lo.shape == (3, BASE, BASE)
    table = np.median(hi.reshape(3, -1), 1)[:, None, None]
    dot_hi = np.abs(hi - table)[:, 17:24, 3:10].max()  # the dot's corner of the table
    dot_lo = np.abs(lo - table)[:, 5:8, 1:3].max()
    assert dot_hi > 2.5 * dot_lo


def test_split_keeps_a_frames_questions_together_and_the_broad_mix_has_no_compositions():
    qa = generate(10, 4, 3, TARGET, 0.15, seed=3)
    parts = split(qa, (0.5, 0.25, 0.25), seed=0)
    frames = [{q.frame for q in p.questions} for p in parts]
    assert sum(len(p) for p in parts) == len(qa) and not frames[0] & frames[1]
    assert not any(q.kind == "left_of" for q in generate(10, 4, 3, BROAD, 0.02, 4).questions)


def test_decomposition_composes_left_of_from_two_places():
    q = parse("Is the red block left of the blue block?", ["yes", "no", NONE])
    subs = decompositions(q)
    assert len(subs) == 2 and [s.args for s in subs[0]] == [("red",), ("blue",)]
    left, right = np.array([0.9, 0.05, 0.05, 0]), np.array([0.0, 0.1, 0.9, 0])
    p = compose(q, [left, right])
    assert p[0] > 0.9 and abs(p.sum() - 1) < 1e-9
    assert paraphrases(q)[0].text == "is the red block to the left of the blue block"
    with pytest.raises(ValueError, match="matches none"):
        parse("what is the meaning of this", ["a", "b"])
    with pytest.raises(ValueError, match="vocabulary"):
        parse("is the gripper open", ["perhaps", "no"])


def test_scores_are_summed_answer_log_likelihoods_over_valid_options_only():
    qa = generate(4, 2, 2, TARGET, 0.15, seed=5)
    t = {k: torch.from_numpy(v) for k, v in tensors(qa, BASE).items()}
    model = build("student").eval()
    s, emb = model(t["image"], t["question"], t["options"])
    assert s.shape == t["mask"].shape and emb.shape == (len(qa), model.d)
    assert (s[t["mask"]] < 0).all()
    p = probs(s, t["mask"])
    assert torch.allclose(p.sum(1), torch.ones(len(qa))) and (p[~t["mask"]] == 0).all()
    assert parameters(build("teacher")) >= 8 * parameters(build("student"))


def test_distillation_losses_train_the_student_toward_the_teacher():
    qa = generate(8, 3, 3, TARGET, 0.15, seed=6)
    data = views(qa)
    teacher = fit(build("teacher"), data, lm_loss, 10, seed=0, batch=16)
    cached = teacher_targets(teacher, data)
    p_t = cached["base"]["options"]
    assert np.allclose(p_t.sum(1), 1, atol=1e-5) and cached["base"]["words"].ndim == 3

    def gap(model) -> float:
        s = torch.from_numpy(scores(model, data["high"]))
        p_s = probs(s / 2.0, torch.from_numpy(data["high"]["mask"])).numpy()
        return float((p_t * (np.log(p_t + 1e-9) - np.log(p_s + 1e-9))).sum(1).mean())

    start = build("student")
    before = gap(start)
    for loss in (odd_loss, token_kd_loss):
        assert gap(fit(build("student"), data, loss, 30, 0, teacher=cached, batch=16)) < before


def test_temperature_scaling_fixes_an_overconfident_model():
    rng = np.random.default_rng(0)
    n, k = 2000, 4
    logits = rng.normal(0, 1, (n, k))
    answer = np.array([rng.choice(k, p=np.exp(l) / np.exp(l).sum()) for l in logits])
    mask = np.ones((n, k), bool)
    t = fit_temperature(3 * logits, mask, answer)
    assert 2.5 < t < 3.6
    hot = probs(torch.from_numpy(3 * logits), torch.from_numpy(mask)).numpy()
    cool = probs(torch.from_numpy(3 * logits), torch.from_numpy(mask), t).numpy()
    assert ece(cool, answer) < 0.5 * ece(hot, answer)


def test_metrics_on_known_cases():
    p = np.array([[0.9, 0.1, 0.0], [0.8, 0.2, 0.0], [0.4, 0.6, 0.0], [0.3, 0.7, 0.0]])
    answer = np.array([0, 1, 1, 0])
    valid = np.array([[True, True, False]] * 4)
    m = summary(p, answer, valid)
    assert m["accuracy"] == 0.5 and m["invalid_option_rate"] == 0.0
    assert m["overconfident_wrong"] == 0.5
    coverage, risk = risk_coverage(p, answer)
    assert list(coverage) == [0.25, 0.5, 0.75, 1.0] and np.allclose(risk, [0.0, 0.5, 2 / 3, 0.5])
    assert np.isclose(m["brier"], np.mean([0.02, 1.28, 0.32, 0.98]))


def _synthetic_candidates(n: int, seed: int) -> tuple[Candidates, np.ndarray]:
    """Requests of two types: `hr` fixes type 0's mistakes, `qd` type 1's; rag never helps."""
    rng = np.random.default_rng(seed)
    answer = rng.integers(0, 3, n)
    kind = rng.integers(0, 2, n)
    first = np.full((n, 3), 0.3)
    wrong = rng.random(n) < 0.5
    first[np.arange(n), np.where(wrong, (answer + 1) % 3, answer)] = 0.4
    first /= first.sum(1, keepdims=True)
    good = np.full((n, 3), 0.05)
    good[np.arange(n), answer] = 0.9
    c = {"hr": np.where((kind == 0)[:, None], good, first),
         "qd": np.where((kind == 1)[:, None], good, first), "rag": first.copy()}
    signals = np.stack([first.max(1), np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n)], 1)
    types = ["arrows" if t == 0 else "other" for t in kind]
    return Candidates(first, c, act.features(signals, types)), answer


def test_router_buys_the_action_that_pays_and_hits_its_target_cost():
    val, answer = _synthetic_candidates(600, 0)
    router = Router({"hr": 3.0, "rag": 0.5, "qd": 2.0}, {a: 1.0 for a in act.ACTIONS})
    router.gains = fit_gains(val, answer)
    gains = router.gain(val.features)
    arrows = val.features[:, 5 + 1] == 1
    assert gains["hr"][arrows].mean() > 0.4 > gains["hr"][~arrows].mean()
    assert gains["qd"][~arrows].mean() > 0.4 > gains["rag"].mean()
    router.set_threshold(val.features, 1.2)
    assert abs(router.cost(router.plans(val.features)) - 1.2) < 0.3
    test, answer = _synthetic_candidates(600, 1)
    routed = router.plans(test.features)
    rng = np.random.default_rng(0)
    cost = router.cost(routed)
    acc = lambda plans: np.mean(apply(test, plans).argmax(1) == answer)  # noqa: E731
    for a in act.ACTIONS:
        assert acc(routed) > acc(fixed_plans(a, len(test), cost, router.costs, rng))
    assert acc(routed) > acc(random_plans(len(test), cost, router.costs, rng))
    assert router.plan({"hr": 0.9, "rag": 0.9, "qd": 0.9}, budget=2.5) == ["rag", "qd"]


def test_final_answer_is_the_most_confident_candidate():
    first = np.array([[0.5, 0.5, 0.0], [0.9, 0.1, 0.0]])
    other = np.array([[0.1, 0.8, 0.1], [0.2, 0.7, 0.1]])
    out = final(first, [other])
    assert out[0].argmax() == 1 and out[1].argmax() == 0

