"""The speaker model: how likely a piece of advice is under each hypothesis about a colour.

`MiniLMSpeaker` scores advice by its MiniLM similarity to each rule's description (a
softmax with inverse temperature `beta`); `LMSpeaker` by any LM's log-probability of the
advice after the rule's description. Advice is written in other words than the descriptions,
so matching it takes the encoder, not string equality. Both allow that the advisor is wrong
(`lapse`: the chance the advice says nothing about the truth), so advice can shift a belief
by a bounded amount and one clear experience can overturn it.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from edgert.methods.social_learning.games import EFFECTS

DESCRIBE = {"kill": "{c} objects are deadly: touching one kills the player",
            "push": "{c} objects are blocks the player can push around",
            "score": "{c} objects give the player points when collected",
            "key": "a {c} object is a key that unlocks the doors",
            "door": "{c} objects are locked doors that block the way",
            "neutral": "{c} objects are harmless and do nothing"}
ADVISE = {"kill": "stay away from the {c} ones, they are deadly",
          "push": "you can shove the {c} blocks around",
          "score": "grab the {c} ones for points",
          "key": "the {c} one unlocks the gates",
          "door": "the {c} ones are locked gates",
          "neutral": "the {c} ones are harmless, just walk over them"}


def with_lapse(loglik: np.ndarray, lapse: float) -> np.ndarray:
    return np.log((1 - lapse) * np.exp(loglik) + lapse / len(loglik))


class MiniLMSpeaker:
    def __init__(self, beta: float = 30.0, lapse: float = 0.1):
        self.beta, self.lapse = beta, lapse
        self._cache: dict[str, np.ndarray] = {}

    def _embed(self, texts: list[str]) -> np.ndarray:
        from edgert.methods.lm.encoder import embed

        missing = [t for t in texts if t not in self._cache]
        if missing:
            self._cache |= dict(zip(missing, embed(missing)))
        return np.stack([self._cache[t] for t in texts])

    def loglik(self, advice: str, colour: str) -> np.ndarray:
        """log P(advice | the colour has each effect), over EFFECTS."""
        desc = self._embed([DESCRIBE[e].format(c=colour) for e in EFFECTS])
        sim = desc @ self._embed([advice])[0]
        return with_lapse(self.beta * sim - logsumexp(self.beta * sim), self.lapse)


class LMSpeaker:
    def __init__(self, lm, lapse: float = 0.1):
        self.lm, self.lapse = lm, lapse

    def loglik(self, advice: str, colour: str) -> np.ndarray:
        prompts = [f"Rule: {DESCRIBE[e].format(c=colour)}. Advice:" for e in EFFECTS]
        scores = np.array(self.lm.logprob(prompts, [" " + advice] * len(EFFECTS)))
        return with_lapse(scores - logsumexp(scores), self.lapse)
