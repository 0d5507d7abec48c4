"""The first answer and the three extra things the student can do for a request, each giving a
candidate option distribution:

- `hr`: re-evaluate on the high-resolution view;
- `rag`: the k nearest exemplars of the same question type (by the student's question-aware
  embedding) vote with their known answers, mixed into the first answer;
- `qd`: sampled decompositions (sub-questions, or paraphrases where the question has no
  parts) answered and composed, their distributions averaged.

The first pass also yields the router's signals: p_max, margin, entropy, retrieval affinity
(mean top-k cosine) and agreement with a paraphrase. `Score` is any scorer — the torch model
in evaluation, the ONNX Runtime bundle live — taking images and the questions (each scorer
reads their words with its own model's `Text`) and returning (option scores, embedding).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from edgert.methods.bolt.data import MAX_OPTIONS, option_mask
from edgert.methods.bolt.questions import (NONE, TYPES, Asked, Question, compose, decompositions,
                                           paraphrases)
from edgert.methods.bolt.scene import BASE, HIGH, view

Score = Callable[[np.ndarray, list[Question | Asked]], tuple[np.ndarray, np.ndarray]]
ACTIONS = ("hr", "rag", "qd")
SIGNALS = ("p_max", "margin", "entropy", "affinity", "agreement")
K_NEAREST = 8


def softmax(x: np.ndarray, mask: np.ndarray, t: float = 1.0) -> np.ndarray:
    z = np.where(mask, x / t, -np.inf)
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def calibrate(p: np.ndarray, t: float) -> np.ndarray:
    """Temperature scaling of a distribution: softmax(log p / t)."""
    return softmax(np.log(np.clip(p, 1e-12, 1)), p > 0, t)


def run_batched(score: Score, images: np.ndarray, questions: list[Question], size: int = 256
                ) -> tuple[np.ndarray, np.ndarray]:
    """Option distributions (N, MAX_OPTIONS; 0 on missing options) and embeddings."""
    out_p, out_e = [], []
    for i in range(0, len(questions), size):
        qs = questions[i:i + size]
        s, e = score(images[i:i + size], qs)
        out_p.append(softmax(s, option_mask(qs)))
        out_e.append(e)
    return np.concatenate(out_p), np.concatenate(out_e)


@dataclass
class Memory:
    """Exemplars for retrieval: normalised embeddings, question types and answers (text)."""

    keys: np.ndarray
    types: np.ndarray
    answers: np.ndarray

    @classmethod
    def build(cls, embeddings: np.ndarray, questions: list[Question]) -> "Memory":
        return cls(_unit(embeddings), np.array([q.type for q in questions]),
                   np.array([q.options[q.answer] for q in questions]))

    def nearest(self, key: np.ndarray, type_: str, k: int = K_NEAREST
                ) -> tuple[np.ndarray, np.ndarray]:
        """Cosines and indices of the k nearest exemplars of the same type."""
        pool = np.flatnonzero(self.types == type_)
        if not len(pool):
            return np.zeros(0), pool
        sims = self.keys[pool] @ _unit(key[None])[0]
        top = np.argsort(-sims)[:k]
        return sims[top], pool[top]

    def save(self, path) -> None:
        np.savez(path, keys=self.keys, types=self.types, answers=self.answers)

    @classmethod
    def load(cls, path) -> "Memory":
        with np.load(path) as f:
            return cls(f["keys"], f["types"], f["answers"])


def _unit(x: np.ndarray) -> np.ndarray:
    return x / (np.linalg.norm(x, axis=-1, keepdims=True) + 1e-9)


@dataclass
class First:
    """The first answer of a batch of requests, its signals, and what retrieval found."""

    p: np.ndarray
    embedding: np.ndarray
    signals: np.ndarray
    votes: np.ndarray


def first_pass(score: Score, hr_images: list[np.ndarray], questions: list[Question],
               memory: Memory, temperature: float) -> First:
    """Base view, question and one paraphrase in one batch, plus the retrieval lookup."""
    base = np.stack([view(im, BASE) for im in hr_images])
    twins = [(paraphrases(q) or [q])[0] for q in questions]
    p, e = run_batched(score, np.concatenate([base, base]), questions + twins)
    n = len(questions)
    p, twin, e = calibrate(p[:n], temperature), p[n:], e[:n]
    votes, affinity = zip(*(_votes(memory, e[i], q) for i, q in enumerate(questions)))
    top2 = np.sort(p, 1)[:, -2:]
    entropy = -(p * np.log(np.clip(p, 1e-12, 1))).sum(1)
    signals = np.stack([top2[:, 1], top2[:, 1] - top2[:, 0], entropy, np.array(affinity),
                        (p.argmax(1) == twin.argmax(1)).astype(float)], 1)
    return First(p, e, signals, np.stack(votes))


def _votes(memory: Memory, key: np.ndarray, q: Question) -> tuple[np.ndarray, float]:
    """The exemplars' answers as a distribution over q's options (an answer that is not
    among them votes for "none of the above"), and the mean top-k cosine."""
    sims, idx = memory.nearest(key, q.type)
    votes = np.zeros(MAX_OPTIONS)
    if not len(idx):
        return votes, 0.0
    weights = np.exp((sims - sims.max()) / 0.05)
    for w, answer in zip(weights, memory.answers[idx]):
        if answer in q.options or NONE in q.options:
            votes[q.options.index(answer if answer in q.options else NONE)] += w
    return votes / max(votes.sum(), 1e-12), float(sims.mean())


def high(score: Score, hr_images: list[np.ndarray], questions: list[Question]) -> np.ndarray:
    images = np.stack([view(im, HIGH) for im in hr_images])
    return run_batched(score, images, questions)[0]


def rag(first: First, questions: list[Question], mix: float) -> np.ndarray:
    """The first answer mixed with the exemplars' votes (valid options only)."""
    valid = option_mask(questions)
    p = (1 - mix) * first.p + mix * first.votes * valid
    return p / p.sum(1, keepdims=True)


def decompose(score: Score, hr_images: list[np.ndarray], questions: list[Question],
              samples: int = 2) -> tuple[np.ndarray, list[list[dict]]]:
    """Average over up to `samples` decompositions of each question of the composed answer;
    with each question's trace (every sub-question, its answer and confidence)."""
    jobs, owners = [], []
    for i, q in enumerate(questions):
        for parts in decompositions(q)[:samples]:
            jobs.append(parts)
            owners.append(i)
    flat = [sub for parts in jobs for sub in parts]
    images = [hr_images[owners[j]] for j, parts in enumerate(jobs) for _ in parts]
    p, _ = run_batched(score, np.stack([view(im, BASE) for im in images]), flat)
    out = np.zeros((len(questions), MAX_OPTIONS))
    traces: list[list[dict]] = [[] for _ in questions]
    at = 0
    for j, parts in enumerate(jobs):
        i = owners[j]
        dists = [p[at + m, :len(sub.options)] for m, sub in enumerate(parts)]
        at += len(parts)
        out[i, :len(questions[i].options)] += compose(questions[i], dists)
        traces[i] += [{"question": sub.text, "answer": sub.options[int(d.argmax())],
                       "p": float(d.max())} for sub, d in zip(parts, dists)]
    counts = np.bincount(owners, minlength=len(questions))
    return out / counts[:, None], traces


def features(signals: np.ndarray, types: list[str]) -> np.ndarray:
    """The gain models' inputs: the five signals and the question type (one-hot)."""
    onehot = np.array([[t == u for u in TYPES] for t in types], float)
    return np.concatenate([signals, onehot], 1)
