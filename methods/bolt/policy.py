"""Fitting the router on validation and keeping it: the retrieval memory (the target training
questions), the per-candidate temperatures, the retrieval mix, one gain model per action and
the threshold for a target average cost. Saved as JSON + npz beside the checkpoint, so the
live service loads exactly what `evaluate` measured."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from sklearn.linear_model import LogisticRegression

from edgert.methods.bolt import actions as act
from edgert.methods.bolt.data import QASet, option_tokens, question_tokens
from edgert.methods.bolt.model import Scorer
from edgert.methods.bolt.questions import Text
from edgert.methods.bolt.router import Candidates, Router, fit_gains, fit_temperatures
from edgert.methods.bolt.scene import BASE, view

# Nominal costs in first passes, as a VLM pays them: high resolution re-encodes 9x the pixels,
# decomposition answers two to four sub-questions, retrieval adds exemplars to the context.
# This small student's measured latencies (evaluate's `latency`) are flatter.
COSTS = {"hr": 3.0, "rag": 0.5, "qd": 2.0}
TARGET_COST = 1.0
MIXES = (0.3, 0.5, 0.7, 0.9)


def torch_score(model: Scorer, text: Text) -> act.Score:
    """The torch model as a scorer; it reads questions as `text` says."""
    model.eval()

    def score(image: np.ndarray, questions: list):
        with torch.no_grad():
            s, e = model(torch.from_numpy(image),
                         torch.from_numpy(question_tokens(questions, text)),
                         torch.from_numpy(option_tokens(questions, text)))
        return s.numpy(), e.numpy()

    return score


def _images(qa: QASet) -> list[np.ndarray]:
    return [qa.frames[q.frame].image for q in qa.questions]


def memory(score: act.Score, qa: QASet) -> act.Memory:
    """The retrieval exemplars: `qa`'s questions with their base-view embeddings."""
    base = np.stack([view(im, BASE) for im in _images(qa)])
    return act.Memory.build(act.run_batched(score, base, qa.questions)[1], qa.questions)


def raw_candidates(score: act.Score, qa: QASet, mem: act.Memory, temperature: float,
                   mixes: tuple[float, ...]) -> tuple[act.First, dict[str, np.ndarray]]:
    """The first pass and every action's uncalibrated answer (rag at each mix)."""
    images, qs = _images(qa), qa.questions
    first = act.first_pass(score, images, qs, mem, temperature)
    raw = {"hr": act.high(score, images, qs), "qd": act.decompose(score, images, qs)[0]}
    raw |= {f"rag@{m}": act.rag(first, qs, m) for m in mixes}
    return first, raw


def candidates(score: act.Score, qa: QASet, mem: act.Memory, router: Router,
               temperature: float, mix: float) -> Candidates:
    first, raw = raw_candidates(score, qa, mem, temperature, (mix,))
    raw["rag"] = raw.pop(f"rag@{mix}")
    cal = {a: act.calibrate(raw[a], router.temperatures[a]) for a in act.ACTIONS}
    return Candidates(first.p, cal, act.features(first.signals, qa.types))


def fit(score: act.Score, train: QASet, val: QASet, temperature: float,
        target: float = TARGET_COST) -> tuple[Router, act.Memory, float, Candidates]:
    """Memory from `train`; temperatures, retrieval mix, gains and threshold on `val`."""
    mem = memory(score, train)
    first, raw = raw_candidates(score, val, mem, temperature, MIXES)
    answer = val.answers
    mix = max(MIXES, key=lambda m: np.mean(raw[f"rag@{m}"].argmax(1) == answer))
    raw = {"hr": raw["hr"], "qd": raw["qd"], "rag": raw[f"rag@{mix}"]}
    router = Router(dict(COSTS), fit_temperatures(raw, answer))
    cal = {a: act.calibrate(raw[a], router.temperatures[a]) for a in act.ACTIONS}
    c = Candidates(first.p, cal, act.features(first.signals, val.types))
    router.gains = fit_gains(c, answer)
    router.set_threshold(c.features, target)
    return router, mem, mix, c


def save(folder: Path, router: Router, mem: act.Memory, temperature: float, mix: float
         ) -> None:
    state = {"costs": router.costs, "temperatures": router.temperatures,
             "threshold": router.threshold, "first_temperature": temperature, "mix": mix,
             "gains": {a: {"coef": m.coef_.tolist(), "intercept": m.intercept_.tolist()}
                       for a, m in router.gains.items()}}
    (folder / "router.json").write_text(json.dumps(state, indent=1))
    mem.save(folder / "memory.npz")


def load(folder: Path) -> tuple[Router, act.Memory, float, float]:
    """The saved router, memory, first-pass temperature and retrieval mix."""
    path = folder / "router.json"
    if not path.exists():
        raise FileNotFoundError(f"no router at {path}: run `edgert train bolt --out "
                                f"{folder}` (it fits and saves the router with the models)")
    state = json.loads(path.read_text())
    gains = {}
    for a, g in state["gains"].items():
        m = LogisticRegression()
        m.coef_, m.intercept_ = np.array(g["coef"]), np.array(g["intercept"])
        m.classes_ = np.array([0, 1])
        gains[a] = m
    router = Router(state["costs"], state["temperatures"], gains, state["threshold"])
    return router, act.Memory.load(folder / "memory.npz"), state["first_temperature"], state[
        "mix"]
