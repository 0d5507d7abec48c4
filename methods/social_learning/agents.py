"""The learner: a posterior over each colour's effect, updated by running the world-model
program on each experienced move and by the speaker's likelihood of each piece of advice; a
planner that walks to the object worth most under that posterior; and the advice it leaves.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from edgert.methods.social_learning.games import EFFECTS, MOVES, State, inside, step
from edgert.methods.social_learning.speaker import ADVISE

EPS = 0.02  # the chance an observation is misread


class Learner:
    def __init__(self, colours: list[str]):
        self.log = {c: np.zeros(len(EFFECTS)) for c in colours}  # uniform prior

    def posterior(self, colour: str) -> np.ndarray:
        p = np.exp(self.log[colour] - self.log[colour].max())
        return p / p.sum()

    def observe(self, s: State, move: tuple[int, int], outcome: str) -> None:
        """Score every hypothesis for the touched colour by running the program on it."""
        colour = s.at((s.agent[0] + move[0], s.agent[1] + move[1]))
        if colour is None:
            return
        for i, effect in enumerate(EFFECTS):
            rules = {c: "neutral" for c in self.log} | {colour: effect}
            predicted = step(s, move, rules)[1]
            self.log[colour][i] += np.log(1 - EPS) if predicted == outcome else np.log(EPS / 5)

    def hear(self, advice: list[str], speaker) -> None:
        for sentence in advice:
            for colour in self.log:
                if f" {colour} " in f" {sentence} ":
                    self.log[colour] += speaker.loglik(sentence, colour)

    def knowledge(self, rules: dict[str, str]) -> float:
        """Mean posterior probability of the true effect."""
        return float(np.mean([self.posterior(c)[EFFECTS.index(e)] for c, e in rules.items()]))

    def advise(self, confidence: float = 0.7) -> list[str]:
        """A sentence for each colour it is sure about."""
        out = []
        for c in self.log:
            p = self.posterior(c)
            if p.max() >= confidence:
                out.append(ADVISE[EFFECTS[int(p.argmax())]].format(c=c))
        return out


def value(p: np.ndarray) -> float:
    """What touching a colour is worth: points, keys, what it would teach, minus death."""
    e = dict(zip(EFFECTS, p))
    entropy = -(p * np.log(p + 1e-12)).sum() / np.log(len(p))
    return e["score"] + 0.3 * e["key"] + 0.5 * entropy - 3.0 * e["kill"]


def act(learner: Learner, s: State, rng: np.random.Generator) -> tuple[int, int]:
    """The first move towards the reachable object of highest value (objects are obstacles
    on the way); a random move to a free cell when nothing is worth touching."""
    worth = {c: value(learner.posterior(c)) for c in learner.log}
    first, dist, queue = {}, {s.agent: 0}, deque([s.agent])
    best, best_move = 0.0, None
    while queue:
        cell = queue.popleft()
        for m in MOVES:
            nxt = (cell[0] + m[0], cell[1] + m[1])
            if nxt in dist or not inside(nxt):
                continue
            dist[nxt] = dist[cell] + 1
            move = first.get(cell, m)
            colour = s.at(nxt)
            if colour is not None:
                score = worth[colour] - 0.02 * dist[nxt] + 1e-3 * rng.random()
                if score > best:
                    best, best_move = score, move
                continue
            first[nxt] = move
            queue.append(nxt)
    if best_move is not None:
        return best_move
    free = [m for m in MOVES if inside((s.agent[0] + m[0], s.agent[1] + m[1]))
            and s.at((s.agent[0] + m[0], s.agent[1] + m[1])) is None]
    return free[rng.integers(len(free))] if free else MOVES[rng.integers(4)]
