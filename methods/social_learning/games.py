"""Ten small grid games with hidden rules, and the one program that runs them.

Each game places coloured objects on a walled grid; each colour has one hidden effect:
`kill` (touching it ends the life), `push` (it slides one cell if the cell behind is free),
`score` (a point, and it disappears), `key` (it disappears and every `door` opens), `door`
(blocks until a key is touched) or `neutral`. A game is won when every scoring object is
taken. `step(state, move, rules)` is the executable world model: the game runs it with the
true rules, and an agent runs it with a hypothesis to predict what a move will do.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

EFFECTS = ("neutral", "kill", "push", "score", "key", "door")
COLOURS = ("red", "blue", "green", "yellow", "purple")
MOVES = ((0, 1), (1, 0), (0, -1), (-1, 0))
SIZE = 8
OUTCOMES = ("moved", "died", "pushed", "blocked", "scored", "opened")


@dataclass(frozen=True)
class State:
    agent: tuple[int, int]
    objects: tuple[tuple[int, int, str], ...]  # (row, col, colour)
    opened: bool = False
    score: int = 0
    dead: bool = False

    def at(self, cell: tuple[int, int]) -> str | None:
        return next((c for r, k, c in self.objects if (r, k) == cell), None)


def inside(cell: tuple[int, int]) -> bool:
    return 0 < cell[0] < SIZE - 1 and 0 < cell[1] < SIZE - 1


def step(s: State, move: tuple[int, int], rules: dict[str, str]) -> tuple[State, str]:
    """The next state and what happened, if the colours follow `rules`."""
    target = (s.agent[0] + move[0], s.agent[1] + move[1])
    if not inside(target):
        return s, "blocked"
    colour = s.at(target)
    if colour is None:
        return replace(s, agent=target), "moved"
    effect = rules[colour]
    rest = tuple(o for o in s.objects if (o[0], o[1]) != target)
    if effect == "kill":
        return replace(s, agent=target, dead=True), "died"
    if effect == "score":
        return replace(s, agent=target, objects=rest, score=s.score + 1), "scored"
    if effect == "key":
        doors = {c for c, e in rules.items() if e == "door"}
        rest = tuple(o for o in rest if o[2] not in doors)
        return replace(s, agent=target, objects=rest, opened=True), "opened"
    if effect == "door":
        return s, "blocked"
    if effect == "push":
        behind = (target[0] + move[0], target[1] + move[1])
        if not inside(behind) or s.at(behind) is not None:
            return s, "blocked"
        return replace(s, agent=target, objects=rest + ((*behind, colour),)), "pushed"
    return replace(s, agent=target), "moved"


@dataclass(frozen=True)
class Game:
    name: str
    rules: dict[str, str]  # colour -> effect
    counts: dict[str, int]  # colour -> objects placed

    def start(self, rng: np.random.Generator) -> State:
        cells = [(r, c) for r in range(1, SIZE - 1) for c in range(1, SIZE - 1)]
        picks = rng.permutation(len(cells))
        agent = cells[picks[0]]
        objects, i = [], 1
        for colour, n in self.counts.items():
            for _ in range(n):
                objects.append((*cells[picks[i]], colour))
                i += 1
        return State(agent, tuple(objects))

    def goal(self) -> int:
        return sum(n for c, n in self.counts.items() if self.rules[c] == "score")


def _game(name: str, rules: dict[str, str], counts: dict[str, int] | None = None) -> Game:
    default = {"kill": 4, "score": 3, "push": 3, "key": 1, "door": 3, "neutral": 3}
    return Game(name, rules, counts or {c: default[e] for c, e in rules.items()})


GAMES = [
    _game("lava", {"red": "kill", "blue": "score", "green": "neutral"}),
    _game("boxes", {"red": "push", "blue": "score", "green": "kill"}),
    _game("vault", {"red": "key", "blue": "door", "green": "score", "yellow": "kill"}),
    _game("decoys", {"red": "neutral", "blue": "kill", "green": "score", "yellow": "neutral"}),
    _game("minefield", {"red": "kill", "blue": "kill", "green": "score"},
          {"red": 5, "blue": 5, "green": 3}),
    _game("warehouse", {"red": "push", "blue": "push", "green": "score", "yellow": "kill"}),
    _game("locked", {"red": "door", "blue": "key", "green": "score", "yellow": "neutral"}),
    _game("swamp", {"red": "neutral", "blue": "neutral", "green": "kill", "yellow": "score"}),
    _game("gauntlet", {"red": "kill", "blue": "push", "green": "key", "yellow": "door",
                       "purple": "score"}),
    _game("orchard", {"red": "score", "blue": "score", "green": "kill", "yellow": "push"},
          {"red": 2, "blue": 2, "green": 4, "yellow": 3}),
]
