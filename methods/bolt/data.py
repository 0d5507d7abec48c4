"""Question sets: the seeded tabletop generator in two mixes, the tensors the scorer takes, and
a loader for Robo2VLM-1's parquet rows (`from_rows` makes a question set of them).

The target mix is what the robot is asked; the broad mix is what the teacher and the
zero-shot student learn from (few letters, dots and arrows, no compositional questions, almost
never "none of the above"), so the teacher is good but not tuned to the target.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgert.runtime.plugin import DataError
from edgert.methods.bolt.questions import SIMULATED, Asked, Question, Text, ask
from edgert.methods.bolt.scene import (ARROWS, BASE, COLORS, HIGH, LETTERS, PLACES, Frame, episode,
                                frame, view)

TARGET = {"gripper": 1, "has_color": 1, "arrow": 2, "dot": 2, "letter": 2, "count": 1,
          "place": 1, "left_of": 2}
BROAD = {"gripper": 3, "has_color": 3, "count": 3, "place": 3, "arrow": 1, "dot": 1,
         "letter": 1}
MAX_OPTIONS = 5


@dataclass
class Photo:
    """A user's image: what a question set needs of a frame."""

    image: np.ndarray  # H x W x 3 uint8


@dataclass
class QASet:
    """Questions with the frames (or photos) they ask about (by frame id)."""

    questions: list[Question | Asked]
    frames: dict[int, Frame | Photo]

    def __len__(self) -> int:
        return len(self.questions)

    def subset(self, index) -> "QASet":
        return QASet([self.questions[i] for i in index], self.frames)

    def images(self, size: int) -> np.ndarray:
        return np.stack([view(self.frames[q.frame].image, size) for q in self.questions])

    @property
    def answers(self) -> np.ndarray:
        return np.array([q.answer for q in self.questions])

    @property
    def types(self) -> list[str]:
        return [q.type for q in self.questions]


def generate(episodes: int, frames_per_episode: int, per_frame: int, mix: dict[str, float],
             none_rate: float, seed: int) -> QASet:
    """`per_frame` questions about each frame of each episode (seeded)."""
    rng = np.random.default_rng(seed)
    frames, questions = {}, []
    for e in range(episodes):
        ep = episode(rng, seed * 100_000 + e)
        for _ in range(frames_per_episode):
            f = frame(ep, rng, len(frames) + seed * 1_000_000)
            frames[f.id] = f
            questions += [ask(f, mix, rng, none_rate) for _ in range(per_frame)]
    return QASet(questions, frames)


def split(qa: QASet, fractions: tuple[float, ...], seed: int) -> list[QASet]:
    """Disjoint parts by frame: a frame's questions stay together (episodes recur, as they
    do for a robot working at one table)."""
    ids = np.array(sorted(qa.frames))
    np.random.default_rng(seed).shuffle(ids)
    edges = np.cumsum([0, *(int(f * len(ids)) for f in fractions)])
    parts = [set(ids[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    return [qa.subset([i for i, q in enumerate(qa.questions) if q.frame in part])
            for part in parts]


def pad(rows: list[list[int]], length: int) -> np.ndarray:
    out = np.zeros((len(rows), length), np.int64)
    for i, row in enumerate(rows):
        out[i, :len(row)] = row[:length]
    return out


def question_tokens(questions: list[Question | Asked], text: Text = SIMULATED) -> np.ndarray:
    return pad([text.tokens(q.text) for q in questions], text.max_question)


def option_tokens(questions: list[Question | Asked], text: Text = SIMULATED,
                  options: int = MAX_OPTIONS) -> np.ndarray:
    """(questions, options, max_answer) answer words + <eos> (cut to fit); missing options are
    all <pad>."""
    eos = text.index["<eos>"]
    out = np.zeros((len(questions), options, text.max_answer), np.int64)
    for i, q in enumerate(questions):
        out[i, :len(q.options)] = pad([text.tokens(o)[:text.max_answer - 1] + [eos]
                                       for o in q.options[:options]], text.max_answer)
    return out


def option_mask(questions: list[Question | Asked], options: int = MAX_OPTIONS) -> np.ndarray:
    return np.array([[k < len(q.options) for k in range(options)] for q in questions])


UNSEEN = -100  # an attribute no label exists for (a user's photo): left out of the loss


def attributes(f: Frame | Photo) -> list[int]:
    """What the frame shows, as class indices: gripper, arrow, dot colour, and per place the
    block's colour and letter (0 = no block). The vision pretraining target; a user's photo
    has none."""
    if isinstance(f, Photo):
        return [UNSEEN] * (3 + 2 * len(PLACES))
    blocks = {b.place: b for b in f.episode.blocks}
    out = [int(f.gripper_open), ARROWS.index(f.arrow), list(COLORS).index(f.episode.dot)]
    for place in PLACES:
        b = blocks.get(place)
        out += [list(COLORS).index(b.color) + 1, LETTERS.index(b.letter) + 1] if b else [0, 0]
    return out


def tensors(qa: QASet, size: int, text: Text = SIMULATED) -> dict[str, np.ndarray]:
    """Everything the scorer trains on, at one view size."""
    return {"image": qa.images(size), "question": question_tokens(qa.questions, text),
            "options": option_tokens(qa.questions, text), "mask": option_mask(qa.questions),
            "answer": qa.answers,
            "attributes": np.array([attributes(qa.frames[q.frame]) for q in qa.questions])}


def views(qa: QASet, text: Text = SIMULATED) -> dict[str, dict[str, np.ndarray]]:
    return {"base": tensors(qa, BASE, text), "high": tensors(qa, HIGH, text)}


# Robo2VLM-1 ----------------------------------------------------------------------------------

@dataclass
class VQARow:
    id: str
    image: np.ndarray  # H x W x 3 uint8
    question: str
    choices: list[str]
    answer: int


def _choices(value) -> list[str]:
    if isinstance(value, str):
        value = ast.literal_eval(value)
    return [str(c) for c in value]


def _image(value, row: int, path: Path) -> np.ndarray:
    import cv2

    data = value.get("bytes") if isinstance(value, dict) else value
    if not data:
        raise DataError(f"{path}: row {row} has no image bytes in field 'image'")
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise DataError(f"{path}: row {row}: field 'image' is not a PNG or JPEG")
    return image[:, :, ::-1]


def load_robo2vlm(path: str | Path) -> list[VQARow]:
    """Rows of a Robo2VLM-1 parquet file (columns id, question, choices, correct_answer,
    image as {"bytes": ...} or raw bytes); choices may be a list or its string form."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.read_table(path).to_pylist()
    except (OSError, pa.ArrowException) as e:
        raise DataError(f"{path}: not a readable parquet file ({e})") from None
    need = {"id", "question", "choices", "correct_answer", "image"}
    if table and (missing := need - set(table[0])):
        raise DataError(f"{path}: missing column(s) {sorted(missing)}; Robo2VLM-1 rows have "
                        f"{sorted(need)}")
    rows = []
    for i, r in enumerate(table):
        try:
            choices = _choices(r["choices"])
        except (ValueError, SyntaxError):
            raise DataError(f"{path}: row {i}: field 'choices' is not a list of answers"
                            ) from None
        answer = int(r["correct_answer"])
        if not 0 <= answer < len(choices):
            raise DataError(f"{path}: row {i}: correct_answer {answer} is not an index into "
                            f"its {len(choices)} choices")
        rows.append(VQARow(str(r["id"]), _image(r["image"], i, path), r["question"], choices,
                           answer))
    return rows


def write_robo2vlm(path: Path, rows: list[VQARow]) -> None:
    """Write rows in Robo2VLM-1's layout (for tests, and to hand a subset to other tools)."""
    import cv2
    import pyarrow as pa
    import pyarrow.parquet as pq

    def png(image: np.ndarray) -> bytes:
        return cv2.imencode(".png", image[:, :, ::-1])[1].tobytes()

    pq.write_table(pa.Table.from_pylist([
        {"id": r.id, "question": r.question, "choices": list(r.choices),
         "correct_answer": r.answer, "image": {"bytes": png(r.image), "path": f"{r.id}.png"}}
        for r in rows]), path)


def as_rows(qa: QASet) -> list[VQARow]:
    return [VQARow(f"frame-{q.frame}", qa.frames[q.frame].image, q.text, list(q.options),
                   q.answer) for q in qa.questions]



def from_rows(rows: list[VQARow]) -> QASet:
    """A question set of a user's rows: one photo per image id, free-text questions. A row
    with more than MAX_OPTIONS choices keeps its right one and the first others."""
    frames: dict[str, int] = {}
    photos, questions = {}, []
    for r in rows:
        frame = frames.setdefault(r.id, len(frames))
        photos[frame] = Photo(r.image)
        others = [k for k in range(len(r.choices)) if k != r.answer][:MAX_OPTIONS - 1]
        keep = sorted(others + [r.answer])
        questions.append(Asked(frame, r.question, tuple(r.choices[k] for k in keep),
                               keep.index(r.answer)))
    return QASet(questions, photos)
