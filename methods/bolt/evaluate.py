"""`edgert evaluate bolt`: the students against the teacher, then the router against fixed
policies at the same average cost, on held-out frames of the target mix (or the test images of a user's Robo2VLM rows).

Results: `teacher`, `zero_shot`, `ce_only`, `token_kd`, `odd` (base view, temperature-scaled;
`ece_raw` before scaling), and the policies over the ODD student `routed`, `never`,
`always_hr`, `always_rag`, `always_qd`, `random` (with `avg_cost` and `flip_rate`). Beside
them: peak memory of teacher and student, the student's ONNX Runtime latency per action, how
often the router buys each action per question type, and the accuracy-budget curve.
"""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from edgert.devices.placement import measure_peak_memory
from edgert.runtime.plugin import Data
from edgert.methods.bolt import policy
from edgert.methods.bolt.actions import ACTIONS
from edgert.methods.bolt.data import option_mask, views
from edgert.methods.bolt.metrics import ece, risk_at, summary
from edgert.methods.bolt.model import Scorer, parameters
from edgert.methods.bolt.questions import TYPES
from edgert.methods.bolt.router import Candidates, Router, apply, fixed_plans, random_plans
from edgert.methods.bolt.scene import HIGH
from edgert.methods.bolt.train import STUDENTS, Config, Trained, probs, scores, target_sets, train_all
from edgert.methods.threads import one_thread
from edgert.streams import local_clock

SWEEP = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5)


def model_results(trained: Trained, test, curves: dict) -> dict[str, dict]:
    base = views(test, trained.text)["base"]
    mask = torch.from_numpy(base["mask"])
    out = {}
    for name in ("teacher", *STUDENTS):
        s = torch.from_numpy(scores(trained.models[name], base))
        raw = probs(s, mask).numpy()
        cal = probs(s, mask, trained.temperature[name]).numpy()
        curves[name] = risk_at(cal, base["answer"])
        out[name] = summary(cal, base["answer"], base["mask"]) | {
            "ece_raw": ece(raw, base["answer"]), "temperature": trained.temperature[name],
            "parameters": parameters(trained.models[name])}
    return out


def policy_results(c: Candidates, router: Router, answer: np.ndarray, valid: np.ndarray,
                   seed: int, curves: dict) -> tuple[dict[str, dict], list[list[str]]]:
    """Routed, never, each fixed action and random, all at the routed mean cost (their
    risk-coverage curves go into `curves`)."""
    rng = np.random.default_rng(seed)
    routed = router.plans(c.features)
    cost = router.cost(routed)
    plans = {"routed": routed, "never": [[] for _ in range(len(c))],
             **{f"always_{a}": fixed_plans(a, len(c), cost, router.costs, rng)
                for a in ACTIONS},
             "random": random_plans(len(c), cost, router.costs, rng)}
    first = c.first.argmax(1)
    out = {}
    for name, p in plans.items():
        final = apply(c, p)
        curves[name] = risk_at(final, answer)
        out[name] = summary(final, answer, valid) | {
            "avg_cost": router.cost(p), "flip_rate": float(np.mean(final.argmax(1) != first))}
    return out, routed


def usage(plans: list[list[str]], types: list[str]) -> dict[str, dict[str, float]]:
    """How often the router bought each action, per question type."""
    return {t: {a: float(np.mean([a in p for p, u in zip(plans, types) if u == t]))
                for a in ACTIONS} for t in TYPES if t in types}


def sweep(router: Router, val: Candidates, test: Candidates, answer: np.ndarray) -> dict:
    """Routed accuracy and cost on test for thresholds set on validation at each target;
    each fixed action on a growing random share of requests."""
    curve = {"routed": []}
    rng = np.random.default_rng(0)
    for target in SWEEP:
        router.set_threshold(val.features, target)
        plans = router.plans(test.features)
        curve["routed"].append((router.cost(plans), _accuracy(apply(test, plans), answer)))
    for a in ACTIONS:
        curve[f"always_{a}"] = [(router.cost(p), _accuracy(apply(test, p), answer)) for p in
                                (fixed_plans(a, len(test), f * router.costs[a], router.costs,
                                             rng) for f in np.linspace(0, 1, 6))]
    curve["random"] = [(router.cost(p), _accuracy(apply(test, p), answer)) for p in
                       (random_plans(len(test), t, router.costs, rng) for t in SWEEP)]
    return curve


def _accuracy(p: np.ndarray, answer: np.ndarray) -> float:
    return float(np.mean(p.argmax(1) == answer))


def peak_memory(model: Scorer) -> float:
    """MB by which a batch-1 high-resolution request through a fresh copy of the model
    raises this process's peak memory (weights included)."""
    state = {k: v.clone() for k, v in model.state_dict().items()}
    image = torch.rand(1, 3, HIGH, HIGH)
    question = torch.ones(1, model.max_question, dtype=torch.long)
    options = torch.ones(1, 5, 5, dtype=torch.long)

    def run() -> None:
        fresh = Scorer(model.d, model.words, model.max_question)
        fresh.load_state_dict(state)
        with torch.no_grad():
            fresh(image, question, options)

    return measure_peak_memory(run)


def latencies(trained: Trained, test, router: Router, mem, t0: float, mix: float,
              requests: int) -> dict[str, dict[str, float]]:
    """p50/p99 ms per action of the live node's code path (student bundle in ONNX Runtime)."""
    from edgert.methods.bolt.export import export
    from edgert.methods.bolt.node import Answer

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ckpt = folder / "checkpoint.pt"
        trained.save(ckpt)
        export(folder / "bundle", ckpt)
        policy.save(folder, router, mem, t0, mix)
        node = Answer("answer", Answer.Params(bundle=folder / "bundle"))
        node.start()
        times: dict[str, list[float]] = {a: [] for a in ("first", *ACTIONS)}
        for q in test.questions[:requests]:
            body = node.answer(q, test.frames[q.frame].image, np.inf, np.inf, local_clock(),
                               plan=list(ACTIONS))
            for step in body["actions"]:
                times[step["action"]].append(step["ms"])
    return {a: {"p50_ms": float(np.percentile(v, 50)), "p99_ms": float(np.percentile(v, 99))}
            for a, v in times.items()}


def evaluate(quick: bool = False, config: Config | None = None, data: Data | None = None
             ) -> dict:
    """Every variant on the simulator's held-out frames, or on the test images of a user's
    Robo2VLM rows (`data`)."""
    cfg = config or (Config.quick() if quick else Config())
    if data is not None:
        cfg = replace(cfg, data=tuple(str(p) for p in data.paths))
    with one_thread():
        return _evaluate(cfg)


def _evaluate(cfg: Config) -> dict:
    sets = target_sets(cfg)
    trained = train_all(cfg)
    curves: dict[str, list] = {}
    results = model_results(trained, sets["test"], curves)
    student = policy.torch_score(trained.models["odd"], trained.text)
    t0 = trained.temperature["odd"]
    router, mem, mix, val = policy.fit(student, sets["train"], sets["val"], t0)
    test = policy.candidates(student, sets["test"], mem, router, t0, mix)
    answer, valid = sets["test"].answers, option_mask(sets["test"].questions)
    policies, routed = policy_results(test, router, answer, valid, cfg.seed, curves)
    results |= policies
    memory = {name: peak_memory(trained.models[name]) for name in ("teacher", "odd")}
    payload = {
        "method": "bolt", "config": cfg.__dict__, "results": results,
        "costs": router.costs, "threshold": router.threshold, "retrieval_mix": mix,
        "temperatures": router.temperatures | {"first": t0},
        "routing": usage(routed, sets["test"].types),
        "peak_memory_mb": memory | {"ratio": memory["odd"] / max(memory["teacher"], 1e-9)},
        "latency": latencies(trained, sets["test"], router, mem, t0, mix, cfg.timed_requests),
        "curve": sweep(router, val, test, answer), "risk_coverage": curves,
        "columns": ["accuracy", "nll", "brier", "ece", "ece_raw", "aurc", "avg_cost",
                    "flip_rate", "overconfident_wrong", "invalid_option_rate"],
    }
    return payload
