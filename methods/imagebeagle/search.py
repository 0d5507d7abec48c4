"""Finding a unit's preferred (or anti-preferred) stimuli with few queries: greedy and beam
walks on a k-nearest-neighbour graph of the embedding, against random search."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.neighbors import NearestNeighbors

Query = Callable[[int], float]


def knn_graph(e: np.ndarray, k: int) -> np.ndarray:
    """(stimuli, k) neighbour indices, self excluded."""
    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(e).kneighbors(e)
    return idx[:, 1:]


class Counter:
    """Queries a unit, each stimulus at most once, counting how many were shown."""

    def __init__(self, respond: Query, sign: float):
        self.respond, self.sign, self.seen = respond, sign, {}

    def __call__(self, i: int) -> float:
        if i not in self.seen:
            self.seen[i] = self.sign * self.respond(i)
        return self.seen[i]


def beam(graph: np.ndarray, query: Counter, goal: set[int], width: int,
         rng: np.random.Generator, budget: int, probes: int = 10) -> int:
    """Queries until a stimulus in `goal` is shown (`budget` if never). The walk starts from
    the best `width` of `probes` random stimuli. Width 1 is first-improvement hill climbing
    (move to the first neighbour that responds better); wider beams show all the frontier's
    neighbours and keep the best `width`. A walk that stops improving starts again."""
    n = len(graph)
    frontier = _probe(n, query, width, probes, rng)
    while len(query.seen) < budget:
        if goal & query.seen.keys():
            return len(query.seen)
        shown = len(query.seen)
        scored = _climb(graph, query, frontier[0], rng) if width == 1 else sorted(
            {j for i in frontier for j in graph[i]} | set(frontier),
            key=lambda j: (query(j), -j), reverse=True)[:width]
        if set(scored) == set(frontier) or len(query.seen) == shown:
            scored = _probe(n, query, width, probes, rng)  # stuck: start elsewhere
        frontier = scored
    return budget


def _climb(graph: np.ndarray, query: Counter, at: int, rng: np.random.Generator) -> list[int]:
    here = query(at)
    for j in rng.permutation(graph[at]):
        if query(j) > here:
            return [j]
    return [at]


def _probe(n: int, query: Counter, width: int, probes: int, rng: np.random.Generator
           ) -> list[int]:
    picks = rng.choice(n, probes, replace=False)
    return sorted(picks, key=lambda j: (query(j), -j), reverse=True)[:width]


def random_search(n: int, query: Counter, goal: set[int], rng: np.random.Generator,
                  budget: int) -> int:
    for i in rng.permutation(n)[:budget]:
        query(i)
        if i in goal:
            return len(query.seen)
    return budget
