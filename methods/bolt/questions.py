"""Templated multiple-choice questions about a tabletop frame, their phrasings, the words the
models know, and the decompositions of compositional questions into sub-questions.

Types (as in Robo2VLM): yes/no, arrows, colors, letters, other. Every question has 3-5
options, the last always "none of the above", which is the answer when the truth is not
among the others.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from edgert.methods.bolt.scene import ARROWS, COLORS, LETTERS, PLACES, Frame

NONE = "none of the above"
TYPES = ("yes/no", "arrows", "colors", "letters", "other")
COUNTS = ("one", "two", "three")
PHRASINGS = {
    "gripper": ("is the gripper open", "is the robot gripper open right now"),
    "has_color": ("is there a {0} block", "does the table hold a {0} block"),
    "arrow": ("which way does the arrow point", "where does the arrow point"),
    "dot": ("what color is the small dot", "which color does the little dot have"),
    "letter": ("which letter is on the {0} block", "what letter does the {0} block show"),
    "count": ("how many blocks are on the table", "how many blocks are there"),
    "place": ("where is the {0} block", "in which part of the table is the {0} block"),
    "left_of": ("is the {0} block left of the {1} block",
                "is the {0} block to the left of the {1} block"),
}
TYPE = {"gripper": "yes/no", "has_color": "yes/no", "arrow": "arrows", "dot": "colors",
        "letter": "letters", "count": "other", "place": "other", "left_of": "other"}
ANSWERS = {"gripper": ("yes", "no"), "has_color": ("yes", "no"), "arrow": ARROWS,
           "dot": tuple(COLORS), "letter": LETTERS, "count": COUNTS, "place": PLACES,
           "left_of": ("yes", "no")}
SPECIAL = ("<pad>", "<bos>", "<eos>")
MAX_QUESTION = 10  # words


def vocabulary() -> tuple[str, ...]:
    words = {w for texts in PHRASINGS.values() for t in texts for w in t.split()}
    words |= {w for answers in ANSWERS.values() for a in answers for w in a.split()}
    words |= set(COLORS) | set(NONE.split())
    return SPECIAL + tuple(sorted(words - {"{0}", "{1}"}))


VOCAB = vocabulary()
INDEX = {w: i for i, w in enumerate(VOCAB)}


@dataclass(frozen=True)
class Question:
    frame: int
    kind: str
    args: tuple[str, ...]
    phrasing: int
    options: tuple[str, ...]
    answer: int

    @property
    def type(self) -> str:
        return TYPE[self.kind]

    @property
    def text(self) -> str:
        return PHRASINGS[self.kind][self.phrasing].format(*self.args)


def tokens(text: str) -> list[int]:
    """Word ids of a question or an answer; a word the models never saw is an error."""
    unknown = [w for w in text.split() if w not in INDEX]
    if unknown:
        raise ValueError(f"words {unknown} are not in the vocabulary of {len(VOCAB)} words")
    return [INDEX[w] for w in text.split()]


def truth(kind: str, args: tuple[str, ...], f: Frame) -> str:
    blocks = {b.color: b for b in f.episode.blocks}
    if kind == "gripper":
        return "yes" if f.gripper_open else "no"
    if kind == "has_color":
        return "yes" if args[0] in blocks else "no"
    if kind == "arrow":
        return f.arrow
    if kind == "dot":
        return f.episode.dot
    if kind == "letter":
        return blocks[args[0]].letter
    if kind == "count":
        return COUNTS[len(blocks) - 1]
    if kind == "place":
        return blocks[args[0]].place
    a, b = (PLACES.index(blocks[c].place) for c in args)
    return "yes" if a < b else "no"


def _args(kind: str, f: Frame, rng: np.random.Generator) -> tuple[str, ...] | None:
    colors = [b.color for b in f.episode.blocks]
    if kind == "has_color":
        return (str(rng.choice(list(COLORS))),)
    if kind in ("letter", "place"):
        return (str(rng.choice(colors)),)
    if kind == "left_of":
        return tuple(str(c) for c in rng.choice(colors, 2, replace=False)) if len(
            colors) > 1 else None
    return ()


def _options(kind: str, right: str, rng: np.random.Generator, none_rate: float
             ) -> tuple[tuple[str, ...], int]:
    pool = list(ANSWERS[kind])
    if len(pool) == 2:
        chosen = pool
    else:
        k = int(rng.integers(2, min(len(pool), 4) + 1))
        others = [a for a in pool if a != right]
        drop_truth = rng.random() < none_rate
        take = min(k, len(others)) if drop_truth else k - 1
        chosen = [str(a) for a in rng.choice(others, take, replace=False)]
        if not drop_truth:
            chosen.append(right)
        rng.shuffle(chosen)
    options = tuple(chosen) + (NONE,)
    return options, options.index(right) if right in options else len(options) - 1


def ask(f: Frame, mix: dict[str, float], rng: np.random.Generator, none_rate: float
        ) -> Question:
    """One question about frame `f`, its kind drawn from `mix` (kind -> weight)."""
    kinds, weights = zip(*mix.items())
    while True:
        kind = str(rng.choice(kinds, p=np.array(weights) / sum(weights)))
        args = _args(kind, f, rng)
        if args is not None:
            break
    options, answer = _options(kind, truth(kind, args, f), rng, none_rate)
    return Question(f.id, kind, args, int(rng.integers(len(PHRASINGS[kind]))), options, answer)


def paraphrases(q: Question) -> list[Question]:
    """The same question in its other phrasings."""
    return [replace(q, phrasing=i) for i in range(len(PHRASINGS[q.kind])) if i != q.phrasing]


def decompositions(q: Question) -> list[list[Question]]:
    """Sub-question sets whose answers compose into q's answer: "is A left of B" becomes
    "where is A" and "where is B", in each phrasing; other questions become paraphrases."""
    if q.kind != "left_of":
        return [[p] for p in paraphrases(q)] or [[q]]
    places = PLACES + (NONE,)
    return [[Question(q.frame, "place", (c,), i, places, 0) for c in q.args]
            for i in range(len(PHRASINGS["place"]))]


def compose(q: Question, parts: list[np.ndarray]) -> np.ndarray:
    """q's option distribution from its sub-questions' distributions (see decompositions)."""
    if q.kind != "left_of":
        return parts[0]
    a, b = (p[:len(PLACES)] / max(p[:len(PLACES)].sum(), 1e-9) for p in parts)
    yes = float(sum(a[i] * b[j] for i in range(3) for j in range(3) if i < j))
    probs = {"yes": yes, "no": 1.0 - yes, NONE: 0.0}
    out = np.array([probs[o] for o in q.options]) + 1e-4
    return out / out.sum()


def parse(text: str, options: list[str] | tuple[str, ...]) -> Question:
    """A request's free-text question as a Question (so it can be paraphrased and
    decomposed); a ValueError says what the student understands when nothing matches."""
    words = " ".join(text.lower().replace("?", " ").split())
    for kind, phrasings in PHRASINGS.items():
        for i, phrasing in enumerate(phrasings):
            found = re.fullmatch(phrasing.replace("{0}", r"(\w+)").replace("{1}", r"(\w+)"),
                                 words)
            if found:
                options = tuple(o.lower() for o in options)
                for o in options:
                    tokens(o)
                return Question(-1, kind, found.groups(), i, options, -1)
    raise ValueError(f"question {text!r} matches none of the {len(PHRASINGS)} question "
                     f"templates the student knows, e.g. {PHRASINGS['arrow'][0]!r}")
