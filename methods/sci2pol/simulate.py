"""A synthetic corpus of scientific papers and the policy briefs written from them.

Each paper is drawn from a small set of facts (a problem, a population, an intervention, a
design, a sample size, an effect with its direction and size, an implication); its four
sections and its brief are written from those facts by templates, so every number and causal
claim in a text can be checked against the facts. Corruptions change one kind of fact in a
brief: a number, the causal claim (direction, or a correlational study told as cause), or a
whole finding left out.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

TOPICS = [("air pollution", "asthma admissions", "low-emission zones", "city residents"),
          ("school meals", "test scores", "free breakfast programs", "primary pupils"),
          ("heat waves", "hospital visits", "cooling centres", "older adults"),
          ("housing costs", "homelessness", "rent subsidies", "low-income families"),
          ("opioid use", "overdose deaths", "naloxone distribution", "rural counties"),
          ("flooding", "crop losses", "wetland restoration", "farming districts"),
          ("screen time", "sleep duration", "school phone bans", "teenagers"),
          ("road safety", "traffic injuries", "speed cameras", "urban drivers")]
DESIGNS = {"randomized trial": True, "natural experiment": True, "cohort study": False,
           "cross-sectional survey": False}  # design -> supports a causal claim
SECTIONS = ("problem", "methods", "findings", "implications")
CORRUPTIONS = ("none", "number", "causal", "omission")


@dataclass(frozen=True)
class Facts:
    problem: str
    outcome: str
    intervention: str
    population: str
    design: str
    n: int
    effect: int  # percent change in the outcome
    decrease: bool
    year: int

    @property
    def causal(self) -> bool:
        return DESIGNS[self.design]


def facts(rng: np.random.Generator) -> Facts:
    problem, outcome, intervention, population = TOPICS[rng.integers(len(TOPICS))]
    design = list(DESIGNS)[rng.integers(len(DESIGNS))]
    return Facts(problem, outcome, intervention, population, design,
                 int(rng.integers(2, 60)) * 100, int(rng.integers(5, 45)),
                 bool(rng.random() < 0.8), int(rng.integers(2008, 2024)))


def effect_phrase(f: Facts, causal: bool | None = None, decrease: bool | None = None) -> str:
    """`reduced` / `was associated with lower` etc.: the causal claim in words."""
    causal = f.causal if causal is None else causal
    decrease = f.decrease if decrease is None else decrease
    if causal:
        return "reduced" if decrease else "increased"
    return "was associated with lower" if decrease else "was associated with higher"


def paper(f: Facts) -> dict[str, str]:
    """The four sections of the paper."""
    return {
        "problem": f"{f.problem.capitalize()} is a growing concern because it drives "
                   f"{f.outcome} among {f.population}.",
        "methods": f"We used a {f.design} of {f.n} {f.population} observed from {f.year} to "
                   f"{f.year + 3}.",
        "findings": f"We find that {f.intervention} {effect_phrase(f)} {f.outcome} by "
                    f"{f.effect} percent.",
        "implications": f"Expanding {f.intervention} could "
                        f"{'lower' if f.decrease else 'raise'} {f.outcome} for "
                        f"{f.population}."}


BRIEF_STYLES = (
    {"problem": "Policymakers face rising {outcome} linked to {problem} among {population}.",
     "methods": "The evidence comes from a {design} covering {n} {population}.",
     "findings": "In this study {intervention} {claim} {outcome} by {effect} percent.",
     "implications": "Governments should consider scaling up {intervention} to {act} "
                     "{outcome}."},
    {"problem": "Among {population}, {problem} is pushing up {outcome}, a pressing issue "
                "for government.",
     "methods": "Researchers followed {n} {population} in a {design}.",
     "findings": "The study shows {intervention} {claim} {outcome} by {effect} percent.",
     "implications": "Wider use of {intervention} is a policy option to {act} {outcome}."})


def brief(f: Facts, style: int = 0, claim: str | None = None) -> dict[str, str]:
    """The policy brief's four parts, in one of two wordings (0: the reference briefs,
    1: the writer whose briefs are scored); `claim` replaces the effect phrase."""
    fields = {"outcome": f.outcome, "problem": f.problem, "population": f.population,
              "design": f.design, "n": f.n, "intervention": f.intervention,
              "effect": f.effect, "claim": claim or effect_phrase(f),
              "act": "cut" if f.decrease else "raise"}
    return {k: v.format(**fields) for k, v in BRIEF_STYLES[style].items()}


def corrupt(f: Facts, kind: str, rng: np.random.Generator, style: int = 1) -> dict[str, str]:
    """The brief with one kind of fact changed (`none`: the true brief)."""
    if kind == "none":
        return brief(f, style)
    if kind == "number":
        shift = int(rng.integers(8, 30)) * (1 if rng.random() < 0.5 else -1)
        return brief(replace(f, effect=max(1, f.effect + shift), n=f.n * int(rng.integers(2, 5))),
                     style)
    if kind == "causal":  # the direction flipped, or a correlation told as a cause
        flip = f.causal or rng.random() < 0.5
        return brief(f, style, effect_phrase(f, causal=True,
                                             decrease=f.decrease != flip))
    if kind == "omission":
        text = brief(f, style)
        text["findings"] = f"The study examined {f.intervention} and {f.outcome}."
        return text
    raise ValueError(f"corruption {kind!r}: one of {CORRUPTIONS}")


def corpus(n: int, seed: int) -> list[Facts]:
    rng = np.random.default_rng(seed)
    return [facts(rng) for _ in range(n)]
