"""Judges of an open-ended answer against its source paper.

`FactChecker` is rule-based: every number in the answer must appear in the source, an effect
claim must keep the source's direction and strength (a correlational study's "associated
with" must not become "reduced"), and a section that reports an effect must still report it.
`LMJudge` asks any LM behind the interface whether the answer is supported and reads
P(yes) from its scores of " yes" and " no". Both return a score in [0, 1].
"""
from __future__ import annotations

import math
import re
from typing import Protocol

from edgert.methods.lm.models import LM

NUMBER = re.compile(r"\b\d+\b")
CLAIM = re.compile(r"\b(reduced|increased|was associated with (?:lower|higher))\b")


class Judge(Protocol):
    def score(self, source: str, answer: str, reference: str) -> float: ...


def claims(text: str) -> list[tuple[bool, bool]]:
    """(causal, decrease) of each effect claim in `text`."""
    return [(not c.startswith("was"), c in ("reduced", "was associated with lower"))
            for c in CLAIM.findall(text)]


class FactChecker:
    def checks(self, source: str, answer: str, reference: str) -> list[bool]:
        """One pass/fail per fact checked."""
        known = set(NUMBER.findall(source))
        out = [n in known for n in NUMBER.findall(answer)]
        said, truth = claims(answer), claims(source)
        out += [c in truth for c in said]
        if claims(reference) and not said:
            out.append(False)  # the reference reports an effect the answer leaves out
        return out

    def score(self, source: str, answer: str, reference: str) -> float:
        checks = self.checks(source, answer, reference)
        return sum(checks) / len(checks) if checks else 1.0


class LMJudge:
    def __init__(self, lm: LM):
        self.lm = lm

    def score(self, source: str, answer: str, reference: str) -> float:
        prompt = (f"Source: {source} Summary: {answer} Is every number and claim in the "
                  f"summary supported by the source? Answer:")
        yes, no = self.lm.logprob([prompt, prompt], [" yes", " no"])
        return 1.0 / (1.0 + math.exp(no - yes))
