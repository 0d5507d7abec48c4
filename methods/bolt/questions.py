"""Templated multiple-choice questions about a tabletop frame, their phrasings, the words the
models know, and the decompositions of compositional questions into sub-questions; and
free-text questions (`Asked`: a user's Robo2VLM rows, or requests to a model trained on them).

Types (as in Robo2VLM): yes/no, arrows, colors, letters, other. Every templated question has
3-5 options, the last always "none of the above", which is the answer when the truth is not
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
UNKNOWN = "<unk>"
MAX_QUESTION = 10  # words
MAX_ANSWER = 5  # "none of the above" + <eos>


def words(text: str) -> list[str]:
    """Lower-case words and numbers, punctuation dropped."""
    return re.findall(r"[a-z0-9]+", text.lower())


@dataclass(frozen=True)
class Text:
    """How a model reads: its word list (`<pad>`, `<bos>`, `<eos>` first; with `<unk>`, words
    it never saw read as that, else they are an error) and how many words of a question and of
    an answer it takes."""

    vocabulary: tuple[str, ...]
    max_question: int = MAX_QUESTION
    max_answer: int = MAX_ANSWER

    @property
    def index(self) -> dict[str, int]:
        return {w: i for i, w in enumerate(self.vocabulary)}

    def tokens(self, text: str) -> list[int]:
        """Word ids of a question or an answer."""
        index, found = self.index, words(text)
        if UNKNOWN in index:
            return [index.get(w, index[UNKNOWN]) for w in found]
        unknown = [w for w in found if w not in index]
        if unknown:
            raise ValueError(f"words {unknown} are not in the vocabulary of "
                             f"{len(self.vocabulary)} words")
        return [index[w] for w in found]

    @classmethod
    def learn(cls, texts: list[str], answers: list[str], min_count: int = 2) -> "Text":
        """The words of a user's questions and answers seen at least `min_count` times (every
        answer word is kept), and lengths covering 95 % of questions and every answer."""
        counts: dict[str, int] = {}
        for t in texts + answers:
            for w in words(t):
                counts[w] = counts.get(w, 0) + 1
        keep = {w for w, n in counts.items() if n >= min_count}
        keep |= {w for a in answers for w in words(a)}
        lengths = sorted(len(words(t)) for t in texts)
        return cls(SPECIAL + (UNKNOWN,) + tuple(sorted(keep)),
                   max(1, lengths[int(0.95 * (len(lengths) - 1))]),
                   max(len(words(a)) for a in answers) + 1)

    def to_dict(self) -> dict:
        return {"vocabulary": list(self.vocabulary), "max_question": self.max_question,
                "max_answer": self.max_answer}

    @classmethod
    def from_dict(cls, d: dict) -> "Text":
        return cls(tuple(d["vocabulary"]), int(d["max_question"]), int(d["max_answer"]))


def vocabulary() -> tuple[str, ...]:
    found = {w for texts in PHRASINGS.values() for t in texts for w in t.split()}
    found |= {w for answers in ANSWERS.values() for a in answers for w in a.split()}
    found |= set(COLORS) | set(NONE.split())
    return SPECIAL + tuple(sorted(found - {"{0}", "{1}"}))


SIMULATED = Text(vocabulary())  # what the tabletop's templated questions need


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


@dataclass(frozen=True)
class Asked:
    """A free-text question about an image (`frame` names it): no template, so no paraphrase
    or decomposition; its type is Robo2VLM's when known."""

    frame: int
    text: str
    options: tuple[str, ...]
    answer: int
    type: str = "other"


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


def paraphrases(q: Question | Asked) -> list[Question]:
    """The same question in its other phrasings (none for free text)."""
    if isinstance(q, Asked):
        return []
    return [replace(q, phrasing=i) for i in range(len(PHRASINGS[q.kind])) if i != q.phrasing]


def decompositions(q: Question | Asked) -> list[list[Question | Asked]]:
    """Sub-question sets whose answers compose into q's answer: "is A left of B" becomes
    "where is A" and "where is B", in each phrasing; other questions become paraphrases."""
    if not isinstance(q, Question) or q.kind != "left_of":
        return [[p] for p in paraphrases(q)] or [[q]]
    places = PLACES + (NONE,)
    return [[Question(q.frame, "place", (c,), i, places, 0) for c in q.args]
            for i in range(len(PHRASINGS["place"]))]


def compose(q: Question | Asked, parts: list[np.ndarray]) -> np.ndarray:
    """q's option distribution from its sub-questions' distributions (see decompositions)."""
    if not isinstance(q, Question) or q.kind != "left_of":
        return parts[0]
    a, b = (p[:len(PLACES)] / max(p[:len(PLACES)].sum(), 1e-9) for p in parts)
    yes = float(sum(a[i] * b[j] for i in range(3) for j in range(3) if i < j))
    probs = {"yes": yes, "no": 1.0 - yes, NONE: 0.0}
    out = np.array([probs[o] for o in q.options]) + 1e-4
    return out / out.sum()


def parse(text: str, options: list[str] | tuple[str, ...], reads: Text = SIMULATED
          ) -> Question | Asked:
    """A request's question for a model that reads `reads`: free text as it is for a model
    trained on free text (its vocabulary has `<unk>`), else the template it matches (so it
    can be paraphrased and decomposed); a ValueError says what the student understands when
    nothing matches."""
    if UNKNOWN in reads.vocabulary:
        return Asked(-1, text, tuple(options), -1)
    options = tuple(o.lower() for o in options)
    said = " ".join(words(text))
    for kind, phrasings in PHRASINGS.items():
        for i, phrasing in enumerate(phrasings):
            found = re.fullmatch(phrasing.replace("{0}", r"(\w+)").replace("{1}", r"(\w+)"),
                                 said)
            if found:
                for o in options:
                    reads.tokens(o)
                return Question(-1, kind, found.groups(), i, options, -1)
    raise ValueError(f"question {text!r} matches none of the {len(PHRASINGS)} question "
                     f"templates the student knows, e.g. {PHRASINGS['arrow'][0]!r}")
