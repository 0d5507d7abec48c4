"""Proposers of candidates, and the memories that steer them.

`RuleProposer` applies the paper's chemistry rules to parents: same-group substitution
(rules 1, 14), oxidation-state substitution (rule 3), prototype substitution (rules 5, 9),
redox variants (rule 7) and tolerance-factor substitution for perovskites (rule 13). With
memory its parents are the best candidates so far and it avoids the compositions that
failed; without memory its parents are always the task's seed compounds. `RandomProposer`
fills random prototypes with random elements. `LMProposer` asks any LM behind the interface
for a compound, in the paper's prompt shape, and parses the formula it writes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from pymatgen.core import Composition, Element

from edgert.methods.llema.structures import PROTOTYPES, Candidate, fits
from edgert.methods.llema.tasks import Task

POOL = ("Li Na K Rb Cs Be Mg Ca Sr Ba Sc Y Ti Zr Hf V Nb Ta Cr Mo W Mn Fe Co Ni Cu Zn Cd B Al "
        "Ga In C Si Ge Sn Pb N P As Sb Bi O S Se Te F Cl Br I").split()
RULES = {1: "same-group elemental substitution", 3: "oxidation state substitution",
         5: "crystal prototype substitution", 7: "oxidation/reduction variant",
         13: "tolerance-factor guided substitution"}


@dataclass
class Memory:
    """Successes (the best candidates so far, with scores), failures (with reasons), and
    how often each element took part in either."""

    size: int = 8
    successes: list[tuple[float, Candidate]] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    elements: dict[str, list[int]] = field(default_factory=dict)  # element -> [wins, fails]

    def add(self, candidate: Candidate, score: float, failure: str | None) -> None:
        for e in set(candidate.elements):
            self.elements.setdefault(e, [0, 0])[bool(failure)] += 1
        if failure:
            self.failures[candidate.formula] = failure
        else:
            self.successes = sorted(self.successes + [(score, candidate)],
                                    key=lambda s: -s[0])[:self.size]

    def weight(self, element: str) -> float:
        """The element's success rate so far, with one pseudo-success and pseudo-failure."""
        wins, fails = self.elements.get(element, (0, 0))
        return (1 + wins) / (2 + wins + fails)


def allowed(task: Task, elements) -> bool:
    els = set(elements)
    return (not (els & task.exclude) and (task.only is None or els <= task.only)
            and (not task.must_contain or bool(els & task.must_contain)))


def seed_candidates(task: Task) -> list[Candidate]:
    """The task's seed compounds on each prototype that fits them (cation first)."""
    out = []
    for formula in task.seeds:
        comp = Composition(formula)
        for proto in PROTOTYPES:
            if fits(proto, comp):
                out.append(as_candidate(comp, proto))
    return [c for c in out if c is not None]


def as_candidate(comp: Composition, proto: str) -> Candidate | None:
    """Elements on the prototype's sites: the element counts in site order, cations (lower
    electronegativity) first where counts tie."""
    stoich = PROTOTYPES[proto][2]
    els = sorted(comp.reduced_composition.items(), key=lambda kv: Element(str(kv[0])).X)
    slots: list[str] = []
    for n in stoich:
        pick = next((str(e) for e, m in els if int(m) == n and str(e) not in slots), None)
        if pick is None:
            return None
        slots.append(pick)
    return Candidate(proto, tuple(slots))


class RuleProposer:
    def __init__(self, memory: Memory | None):
        self.memory = memory

    def _parents(self, task: Task) -> tuple[list[Candidate], np.ndarray]:
        """Seeds and remembered successes, weighted by score (seeds not yet scored: 0.5)."""
        scored = {c: s for s, c in self.memory.successes} if self.memory else {}
        parents = list(dict.fromkeys(seed_candidates(task) + list(scored)))
        w = np.array([scored.get(c, 0.5) for c in parents]) + 1e-3
        return parents, w / w.sum()

    def propose(self, task: Task, n: int, rng: np.random.Generator,
                seen: set[str]) -> list[Candidate]:
        (parents, p), out, tries = self._parents(task), [], 0
        weight = self.memory.weight if self.memory else None
        while len(out) < n and tries < 200 * n:
            tries += 1
            child = mutate(parents[rng.choice(len(parents), p=p)], rng, weight)
            if child is None or child.formula in seen or not allowed(task, child.elements):
                continue
            if self.memory and child.formula in self.memory.failures:
                continue
            seen.add(child.formula)
            out.append(child)
        return out


class RandomProposer:
    def propose(self, task: Task, n: int, rng: np.random.Generator,
                seen: set[str]) -> list[Candidate]:
        out, tries = [], 0
        while len(out) < n and tries < 200 * n:
            tries += 1
            proto = list(PROTOTYPES)[rng.integers(len(PROTOTYPES))]
            els = tuple(rng.choice(POOL, len(PROTOTYPES[proto][2]), replace=False))
            c = Candidate(proto, tuple(str(e) for e in els))
            if c.formula not in seen and allowed(task, c.elements):
                seen.add(c.formula)
                out.append(c)
        return out


class LMProposer:
    """The paper's prompt: the task, the memories, a rule and a known compound; the reply's
    first formula that fits a prototype becomes the candidate."""

    FORMULA = re.compile(r"\b(?:[A-Z][a-z]?\d*){2,3}\b")

    def __init__(self, lm, memory: Memory):
        self.lm, self.memory = lm, memory

    def prompt(self, task: Task, parent: Candidate, rule: int) -> str:
        goals = ", ".join(f"{k} in [{lo}, {hi}]" for k, (lo, hi) in task.bounds.items())
        good = ", ".join(c.formula for _, c in self.memory.successes[:4]) or "none yet"
        bad = ", ".join(list(self.memory.failures)[-4:]) or "none yet"
        return (f"Task: {task.name} ({goals}). Good so far: {good}. Failed: {bad}. "
                f"Input compound: {parent.formula}. Selected rule: {RULES[rule]}. Compound:")

    def propose(self, task: Task, n: int, rng: np.random.Generator,
                seen: set[str]) -> list[Candidate]:
        parents = [c for _, c in self.memory.successes] or seed_candidates(task)
        prompts = [self.prompt(task, parents[rng.integers(len(parents))],
                               list(RULES)[rng.integers(len(RULES))]) for _ in range(n)]
        out = []
        for reply in self.lm.generate(prompts, 24):
            c = parse(reply)
            if c and c.formula not in seen and allowed(task, c.elements):
                seen.add(c.formula)
                out.append(c)
        return out


def parse(text: str) -> Candidate | None:
    for match in LMProposer.FORMULA.findall(text):
        try:
            comp = Composition(match)
        except ValueError:
            continue
        for proto in PROTOTYPES:
            if fits(proto, comp) and (c := as_candidate(comp, proto)):
                return c
    return None


def mutate(parent: Candidate, rng: np.random.Generator, weight=None) -> Candidate | None:
    """One rule applied to one parent; `weight(element)` (from memory) favours the
    substitutes that worked before."""
    rule = list(RULES)[rng.integers(len(RULES))]
    els = list(parent.elements)
    i = int(rng.integers(len(els)))
    if rule == 1:
        group = Element(els[i]).group
        options = [e for e in POOL if Element(e).group == group and e != els[i]]
    elif rule == 3:
        states = set(Element(els[i]).common_oxidation_states)
        options = [e for e in POOL if states & set(Element(e).common_oxidation_states)
                   and e != els[i]]
    elif rule == 13 and parent.prototype == "perovskite" and i < 2:
        options = [e for e in POOL if _tolerance(els[:i] + [e] + els[i + 1:])]
    elif rule in (5, 7):
        same = [p for p in PROTOTYPES if len(PROTOTYPES[p][2]) == len(els) and
                p != parent.prototype]
        same = [p for p in same if (rule == 5) == (PROTOTYPES[p][2] == PROTOTYPES[
            parent.prototype][2])]
        return Candidate(same[rng.integers(len(same))], tuple(els)) if same else None
    else:
        return None
    if not options:
        return None
    w = np.array([weight(e) if weight else 1.0 for e in options])
    els[i] = str(options[rng.choice(len(options), p=w / w.sum())])
    return Candidate(parent.prototype, tuple(els)) if len(set(els)) == len(els) else None


def _tolerance(els: list[str]) -> bool:
    """Goldschmidt's tolerance factor of an ABX3 perovskite in [0.8, 1.0]."""
    a, b, x = (float(Element(e).average_ionic_radius) or 0.0 for e in els)
    if not (a and b and x):
        return False
    return 0.8 <= (a + x) / (2 ** 0.5 * (b + x)) <= 1.0
