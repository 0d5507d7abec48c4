"""Digit-string tasks whose difficulty depends on the prompt.

The base LM is pretrained on four operations on four digits, each introduced by its own
prompt word and followed by a context word it learns to ignore
(`reverse kilo : 3 1 4 1 = 1 4 1 3`). A downstream query is a context word and four digits;
each context means one operation, half of them followed by adding one to every digit. A
query's best prompt is its operation's word; the prompt alone solves the plain half, and the
added one needs the weights to change.
"""
from __future__ import annotations

import numpy as np

OPS = ("reverse", "sort", "copy", "swap")
CANDIDATES = OPS + ("answer", "please", "now")  # the prompt head's choices
CONTEXTS = ("alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima")
TASKS = {c: (OPS[i % 4], i // 4) for i, c in enumerate(CONTEXTS)}  # context -> (op, shift)
DIGITS = 4


def apply(op: str, x: np.ndarray) -> np.ndarray:
    """(n, DIGITS) -> (n, DIGITS)."""
    if op == "reverse":
        return x[:, ::-1]
    if op == "sort":
        return np.sort(x, 1)
    if op == "swap":
        return x[:, [1, 0, 3, 2]]
    return x.copy()


def text(prompt: str, context: str, x: np.ndarray, y: np.ndarray) -> str:
    return f"{prompt} {context} : {' '.join(map(str, x))} = {' '.join(map(str, y))}"


def pretraining_corpus(n: int, rng: np.random.Generator) -> list[str]:
    """Each operation with its own prompt word."""
    x = rng.integers(0, 10, (n, DIGITS))
    ops = rng.integers(0, len(OPS), n)
    ctx = rng.integers(0, len(CONTEXTS), n)
    return [text(OPS[o], CONTEXTS[c], xi, apply(OPS[o], xi[None])[0])
            for o, c, xi in zip(ops, ctx, x)]


def queries(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Context index (n,), digits (n, DIGITS) and target digits (n, DIGITS)."""
    ctx = rng.integers(0, len(CONTEXTS), n)
    x = rng.integers(0, 10, (n, DIGITS))
    y = np.empty_like(x)
    for i, c in enumerate(CONTEXTS):
        op, shift = TASKS[c]
        y[ctx == i] = (apply(op, x[ctx == i]) + shift) % 10
    return ctx, x, y


def best_prompt(ctx: np.ndarray) -> np.ndarray:
    """The index in CANDIDATES of each query's operation word (the base LM's best prompt)."""
    return np.array([CANDIDATES.index(TASKS[CONTEXTS[c]][0]) for c in ctx])
