"""The budget-aware router: buy an action only when its expected gain per unit cost pays.

One gain model per action (logistic regression on the first pass's signals and the question
type) estimates P[the action fixes a wrong first answer], fitted on validation. For each
request the actions are taken greedily by utility = gain x value / cost while the utility is
above a threshold and the request's budget allows; the threshold is set by bisection so the
average cost on validation hits a target. The final answer is the candidate (first answer or
an action's) with the highest calibrated confidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.linear_model import LogisticRegression

from edgert.methods.bolt.actions import ACTIONS, calibrate

VALUE = 1.0


@dataclass
class Candidates:
    """Every request's first answer and each action's answer, calibrated, and the features."""

    first: np.ndarray
    actions: dict[str, np.ndarray]
    features: np.ndarray

    def __len__(self) -> int:
        return len(self.first)


@dataclass
class Router:
    costs: dict[str, float]
    temperatures: dict[str, float] = field(default_factory=dict)
    gains: dict[str, LogisticRegression] = field(default_factory=dict)
    threshold: float = 0.0

    def gain(self, features: np.ndarray) -> dict[str, np.ndarray]:
        return {a: self.gains[a].predict_proba(features)[:, 1] for a in ACTIONS}

    def plan(self, gains: dict[str, float], budget: float = np.inf,
             threshold: float | None = None) -> list[str]:
        """The actions to take for one request, best utility first."""
        threshold = self.threshold if threshold is None else threshold
        spent, chosen = 0.0, []
        for a in sorted(ACTIONS, key=lambda a: -gains[a] * VALUE / self.costs[a]):
            if gains[a] * VALUE / self.costs[a] > threshold and spent + self.costs[a] <= budget:
                chosen.append(a)
                spent += self.costs[a]
        return chosen

    def plans(self, features: np.ndarray, threshold: float | None = None) -> list[list[str]]:
        g = self.gain(features)
        return [self.plan({a: g[a][i] for a in ACTIONS}, threshold=threshold)
                for i in range(len(features))]

    def cost(self, plans: list[list[str]]) -> float:
        return float(np.mean([sum(self.costs[a] for a in p) for p in plans]))

    def set_threshold(self, features: np.ndarray, target: float, steps: int = 40) -> float:
        """Bisection on the threshold so the mean cost over `features` is about `target`."""
        g = self.gain(features)
        utilities = [g[a] / self.costs[a] for a in ACTIONS]
        lo, hi = 0.0, float(max(u.max() for u in utilities)) + 1e-9
        for _ in range(steps):
            mid = (lo + hi) / 2
            if self.cost(self.plans(features, mid)) > target:
                lo = mid
            else:
                hi = mid
        self.threshold = hi
        return hi


def fit_temperatures(raw: dict[str, np.ndarray], answer: np.ndarray) -> dict[str, float]:
    """Per-candidate temperatures minimising validation NLL (a grid then a local refine)."""
    out = {}
    for name, p in raw.items():
        grid = np.exp(np.linspace(np.log(0.05), np.log(20), 121))
        nll = [-np.log(calibrate(p, t)[np.arange(len(answer)), answer] + 1e-12).mean()
               for t in grid]
        out[name] = float(grid[int(np.argmin(nll))])
    return out


def fit_gains(c: Candidates, answer: np.ndarray, seed: int = 0
              ) -> dict[str, LogisticRegression]:
    """P[action fixes a wrong first answer] = P[first wrong and the final answer after the
    action right], from the signals and the type, on validation."""
    first_wrong = c.first.argmax(1) != answer
    models = {}
    for a in ACTIONS:
        fixed = first_wrong & (final(c.first, [c.actions[a]]).argmax(1) == answer)
        model = LogisticRegression(C=1.0, max_iter=1000, random_state=seed)
        if fixed.all() or not fixed.any():
            fixed = fixed.copy()
            fixed[0] = not fixed[0]  # one flipped label keeps a two-class fit defined
        models[a] = model.fit(c.features, fixed.astype(int))
    return models


def final(first: np.ndarray, candidates: list[np.ndarray]) -> np.ndarray:
    """Per request, the candidate distribution with the highest calibrated confidence."""
    stack = np.stack([first, *candidates])
    best = stack.max(2).argmax(0)
    return stack[best, np.arange(len(first))]


def apply(c: Candidates, plans: list[list[str]]) -> np.ndarray:
    """The final distributions when request i takes the actions plans[i]."""
    out = c.first.copy()
    for i, plan in enumerate(plans):
        if plan:
            out[i] = final(c.first[i:i + 1], [c.actions[a][i:i + 1] for a in plan])[0]
    return out


def fixed_plans(action: str, n: int, cost: float, costs: dict[str, float],
                rng: np.random.Generator) -> list[list[str]]:
    """Always take `action`, on as many requests (drawn at random) as mean cost `cost` pays."""
    share = min(1.0, cost / costs[action])
    take = rng.permutation(n)[:int(round(share * n))]
    plans: list[list[str]] = [[] for _ in range(n)]
    for i in take:
        plans[i] = [action]
    return plans


def random_plans(n: int, cost: float, costs: dict[str, float], rng: np.random.Generator
                 ) -> list[list[str]]:
    """Random (request, action) purchases until the mean cost reaches `cost`."""
    plans: list[list[str]] = [[] for _ in range(n)]
    pairs = [(i, a) for i in range(n) for a in ACTIONS]
    spent = 0.0
    for j in rng.permutation(len(pairs)):
        i, a = pairs[j]
        if spent + costs[a] > cost * n:
            continue
        plans[i].append(a)
        spent += costs[a]
    return plans
