"""Score: a decoder's online accuracy, where the cues carry the class.

Each decision (a row of class probabilities) is paired with the cue marker of its trial: the
`epoch` node's `cues` output, stamped with the trial's last sample as the decision derived
from it is. The marker names the true class through `classes` (class -> marker, or `re:` and
a pattern the whole marker must match; a bundle trained on a user's recordings sets it), else
by being the class's name (the decisions' channel names). Per-trial decisions go into the
report.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from pydantic import Field

from edgert.runtime.node import Node, Params
from edgert.streams import Chunk, StreamInfo

KEEP = 10_000  # decisions kept for the report


def cue_class(classes: dict[str, str]) -> Callable[[str], int | None]:
    """marker -> class index or None: each class's marker is its exact text, or a regular
    expression the whole marker must match when written `re:PATTERN`."""
    tests = []
    for k, marker in enumerate(classes.values()):
        if marker.startswith("re:"):
            pattern = re.compile(marker[3:])
            tests.append((k, lambda v, p=pattern: p.fullmatch(v) is not None))
        else:
            tests.append((k, lambda v, m=marker: v == m))
    return lambda value: next((k for k, test in tests if test(value)), None)


def cue_pattern(classes: dict[str, str]) -> str:
    """One regular expression matching any class's marker (for `epoch.pattern`)."""
    return "|".join(f"(?:{m[3:]})" if m.startswith("re:") else re.escape(m)
                    for m in classes.values())


class Score(Node):
    """`probs`: one row of class probabilities per trial; `cues`: the epoch's cue markers."""

    inputs = ("probs", "cues")
    outputs = ()
    latency = False  # it watches the pipeline's output; it is not one of its ends

    class Params(Params):
        classes: dict[str, str] | None = Field(None, description="class -> cue marker (or "
                                               "re:PATTERN), in the decoder's class order; "
                                               "none: a marker is its class's name")

    def start(self) -> None:
        self.pending: dict[str, dict[float, object]] = {"probs": {}, "cues": {}}
        self.decisions: list[dict] = []
        self.scored = self.correct = self.unlabelled = 0
        self.labels: list[str] = list(self.p.classes or {})
        self.which = cue_class(self.p.classes) if self.p.classes else None

    def _learn_labels(self, info: StreamInfo) -> None:
        """Without `classes`, the decisions' channel names are the classes and their markers."""
        if self.which is None and info.channels:
            self.labels = list(info.channels)
            self.which = cue_class({k: k for k in self.labels})

    def process(self, inputs: dict[str, Chunk]) -> None:
        (port, chunk), = inputs.items()
        if port == "probs":
            self._learn_labels(chunk.info)
        for stamp, row in zip(chunk.timestamps[-len(chunk.data):], chunk.data):
            self.pending[port][round(float(stamp), 6)] = row
        for stamp in sorted(set(self.pending["probs"]) & set(self.pending["cues"])):
            self._score(stamp, self.pending["probs"].pop(stamp),
                        str(self.pending["cues"].pop(stamp)[0]))
        for side in self.pending.values():  # a trial whose other half never came
            for stamp in sorted(side)[:-64]:
                side.pop(stamp)
        return None

    def _score(self, stamp: float, probs: np.ndarray, marker: str) -> None:
        true = self.which(marker) if self.which else None
        predicted = int(np.argmax(probs))
        if true is None:
            self.unlabelled += 1
        else:
            self.scored += 1
            self.correct += int(predicted == true)
        if len(self.decisions) < KEEP:
            self.decisions.append({
                "t": stamp, "marker": marker,
                "true": None if true is None else self.labels[true],
                "predicted": self.labels[predicted] if predicted < len(self.labels)
                else str(predicted), "p": round(float(np.max(probs)), 4),
                "running_accuracy": round(self.correct / self.scored, 4) if self.scored
                else None})

    def stats(self) -> dict:
        return {"scored": self.scored, "correct": self.correct, "unlabelled": self.unlabelled,
                "online_accuracy": self.correct / self.scored if self.scored else None,
                "decisions": self.decisions}
