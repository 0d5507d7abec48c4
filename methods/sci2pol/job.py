"""One cell of the sci2pol job: one responder answers the 18 tasks, every answer is scored.

Responders: `writer_<corruption>` writes each open-ended answer from the paper's facts in
the other wording than the reference briefs, with one kind of fact corrupted (`none`,
`number`, `causal`, `omission`); it answers no multiple-choice task. `extractive` answers
multiple choice at random and copies the paper's own sentences as open-ended answers (the
floor). `lm` asks the model at `Config.lm` (a transformers folder or an OpenAI-compatible
URL): the option with the highest log-probability, and greedy text. With `data` (a folder of
the benchmark's own `taskN.jsonl` files) the tasks are the benchmark's, and only `lm` and
`extractive` can answer them (the writers need this corpus's facts).

Metrics: `taskNN` (multiple choice: accuracy; open-ended: the judge's score), `mc_f1` (macro
F1 over the multiple-choice answers), and over the open-ended answers `rouge_l`, `token_f1`,
`embedding`, `judge` (rule-based fact checker against the paper) and, with `lm_judge`, `lm_judge`.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from sklearn.metrics import f1_score

from edgert.runtime.plugin import DataError
from edgert.methods.lm.models import require
from edgert.methods.sci2pol.data import read_bench
from edgert.methods.sci2pol.judge import FactChecker, LMJudge
from edgert.methods.sci2pol.metrics import embedding_similarity, rouge_l, token_f1
from edgert.methods.sci2pol.simulate import CORRUPTIONS, SECTIONS, corpus, corrupt
from edgert.methods.sci2pol.tasks import Task, build
from edgert.methods.threads import one_thread

RESPONDERS = tuple(f"writer_{c}" for c in CORRUPTIONS) + ("extractive", "lm")


class Config(BaseModel):
    responder: str = Field("writer_none", pattern="|".join(RESPONDERS))
    papers: int = Field(60, ge=4)
    lm: str | None = None
    lm_judge: bool = False
    max_new_tokens: int = Field(48, ge=1)
    data: str | None = None


def grid(quick: bool) -> list[dict]:
    """Every writer and the extractive floor; the full grid scores more papers."""
    return [Config(responder=r, papers=60 if quick else 300).model_dump()
            for r in RESPONDERS if r != "lm"]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    if cfg.responder == "lm":
        require(cfg.lm, "responder", "lm")
    if cfg.data and cfg.responder.startswith("writer"):
        raise DataError(f"responder {cfg.responder!r} writes from this corpus's facts; with "
                        "data give responder 'lm' or 'extractive'")
    with one_thread():
        return _run(cfg, seed, out)


def _lm(cfg: Config):
    from edgert.methods.lm.models import open_lm

    return open_lm(cfg.lm) if cfg.lm else None


def _mc_answers(task: Task, cfg: Config, lm, rng: np.random.Generator) -> list[int] | None:
    if cfg.responder.startswith("writer"):
        return None
    if cfg.responder == "extractive":
        return [int(rng.integers(len(i["options"]))) for i in task.items]
    picks = []
    for item in task.items:
        scores = lm.logprob([item["prompt"]] * len(item["options"]), item["options"])
        picks.append(int(np.argmax(scores)))
    return picks


def _open_answers(task: Task, cfg: Config, lm, rng: np.random.Generator) -> list[str]:
    if cfg.responder.startswith("writer"):
        kind = cfg.responder.removeprefix("writer_")
        out = []
        for item in task.items:
            text = corrupt(item["facts"], kind, rng, style=1)
            out.append(" ".join(text[s] for s in SECTIONS) if item["section"] == "all"
                       else text[item["section"]])
        return out
    if cfg.responder == "extractive":
        return [i["prompt"].split(": ", 1)[-1] if task.number < 11 else i["source"]
                for i in task.items]
    return lm.generate([i["prompt"] for i in task.items], cfg.max_new_tokens)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    tasks = read_bench(Path(cfg.data)) if cfg.data else build(corpus(cfg.papers, seed), seed)
    lm = _lm(cfg)
    judges = {"judge": FactChecker()} | ({"lm_judge": LMJudge(lm)} if cfg.lm_judge and lm
                                          else {})
    metrics: dict[str, float] = {}
    truth, picked = [], []
    scores: dict[str, list[float]] = {k: [] for k in ("rouge_l", "token_f1", "embedding",
                                                       *judges)}
    answers = {}
    for task in tasks:
        if task.kind == "mc":
            picks = _mc_answers(task, cfg, lm, rng)
            if picks is None:
                continue
            right = [i["answer"] for i in task.items]
            metrics[f"task{task.number:02d}"] = float(np.mean(np.equal(picks, right)))
            truth += [f"{task.number}:{r}" for r in right]
            picked += [f"{task.number}:{p}" for p in picks]
            continue
        texts = _open_answers(task, cfg, lm, rng)
        refs = [i["reference"] for i in task.items]
        per = {"rouge_l": rouge_l(texts, refs), "token_f1": token_f1(texts, refs),
               "embedding": embedding_similarity(texts, refs)}
        for name, judge in judges.items():
            per[name] = np.array([judge.score(i["source"], t, i["reference"])
                                  for i, t in zip(task.items, texts)])
        for k, v in per.items():
            scores[k] += v.tolist()
        metrics[f"task{task.number:02d}"] = float(per["judge"].mean())
        answers[task.number] = texts[:3]
    if truth:
        metrics["mc_f1"] = float(f1_score(truth, picked, average="macro"))
    metrics |= {k: float(np.mean(v)) for k, v in scores.items() if v}
    (out / "answers.json").write_text(json.dumps(answers, indent=1))
    return metrics
