"""Scores of an answer against a reference: exact match and F1 for multiple choice, and for
open-ended text ROUGE-L (rouge-score), token F1 and MiniLM embedding similarity."""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np

from edgert.methods.lm.encoder import embed


@lru_cache(maxsize=1)
def _rouge():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(answers: list[str], references: list[str]) -> np.ndarray:
    return np.array([_rouge().score(r, a)["rougeL"].fmeasure for a, r in zip(answers, references)])


def token_f1(answers: list[str], references: list[str]) -> np.ndarray:
    """SQuAD-style bag-of-words F1."""
    out = []
    for a, r in zip(answers, references):
        a_tok, r_tok = a.lower().split(), r.lower().split()
        common = sum((Counter(a_tok) & Counter(r_tok)).values())
        out.append(0.0 if common == 0 else
                   2 * common / (len(a_tok) + len(r_tok)))
    return np.array(out)


def embedding_similarity(answers: list[str], references: list[str]) -> np.ndarray:
    """Cosine of MiniLM sentence embeddings."""
    a, r = embed(answers), embed(references)
    return (a * r).sum(1)
