"""Seeded social scenarios with a belief/intent/desire/emotion causal chain.

A person wants one of two objects, puts it somewhere, and either watches or misses someone
moving it; distractor sentences about other people sit in between. Each link follows from the
one before: the desire names the object, the belief is where the person last saw it, the
intent is to look there, and the emotion follows from whether the object is there. The
benchmark split holds more distractors than the training split, so it asks for longer
tracking than training showed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NAMES = ["anna", "ben", "chloe", "dan", "emma", "finn", "grace", "hugo", "iris", "jack"]
OBJECTS = ["apple", "ball", "book", "cake", "coin", "key", "pen", "toy"]
PLACES = ["bag", "basket", "box", "cupboard", "drawer", "shelf", "table", "tin"]
LINKS = ("desire", "belief", "intent", "emotion")
QUESTIONS = {"desire": "wants ?", "belief": "thinks {o} in ?", "intent": "looks in ?",
             "emotion": "feels ?"}
EMOTIONS = ("happy", "surprised")


@dataclass(frozen=True)
class Scenario:
    story: str
    answers: dict[str, str]  # link -> one-word answer
    person: str
    wanted: str

    def question(self, link: str) -> str:
        return QUESTIONS[link].format(o=self.wanted)


def scenario(rng: np.random.Generator, distractors: int) -> Scenario:
    a, b, c = rng.choice(NAMES, 3, replace=False)
    wanted, other = rng.choice(OBJECTS, 2, replace=False)
    first, moved, spare = rng.choice(PLACES, 3, replace=False)
    sees = bool(rng.random() < 0.5)
    is_moved = bool(rng.random() < 0.75)
    lines = [f"{a} wants {wanted} .", f"{a} puts {wanted} in {first} .",
             f"{a} puts {other} in {spare} ."]
    lines += [f"{c} drops {rng.choice(OBJECTS)} in {rng.choice(PLACES)} ."
              for _ in range(distractors)]
    lines.append(f"{a} {'stays' if sees else 'leaves'} .")
    lines.append(f"{b} moves {wanted if is_moved else other} to {moved} .")
    if not sees:
        lines.append(f"{a} returns .")
    actual = moved if is_moved else first
    belief = actual if sees else first
    answers = {"desire": wanted, "belief": belief, "intent": belief,
               "emotion": EMOTIONS[0] if belief == actual else EMOTIONS[1]}
    return Scenario(" ".join(lines), answers, str(a), str(wanted))


def split(n: int, seed: int, distractors: tuple[int, int]) -> list[Scenario]:
    """`n` scenarios with between `distractors[0]` and `distractors[1]` distractor lines."""
    rng = np.random.default_rng(seed)
    return [scenario(rng, int(rng.integers(distractors[0], distractors[1] + 1)))
            for _ in range(n)]


def chain_prompt(s: Scenario) -> str:
    """One prompt asking the whole chain; the answer is the four words in link order."""
    asks = " ".join(s.question(link) for link in LINKS)
    return f"{s.story} | {asks} :"


KEYS = {"desire": "wants", "belief": "thinks", "intent": "looks", "emotion": "feels"}


def chain_answer(s: Scenario) -> str:
    """` wants apple thinks box looks box feels happy`: each answer after its link's word,
    so the policy always knows which link it is answering."""
    return "".join(f" {KEYS[link]} {s.answers[link]}" for link in LINKS)


def read_answer(text: str) -> dict[str, str]:
    """The answer to each link in a generated chain ("" where it is missing)."""
    words = text.split()
    out = {}
    for link in LINKS:
        key = KEYS[link]
        out[link] = words[words.index(key) + 1] if key in words[:-1] else ""
    return out


def vocabulary() -> list[str]:
    """Every sentence shape the generator writes, for the word-level tokenizer."""
    words = NAMES + OBJECTS + PLACES + list(EMOTIONS)
    fixed = [chain_prompt(x) for x in split(50, 0, (0, 2))]
    return fixed + [" ".join(words)]
