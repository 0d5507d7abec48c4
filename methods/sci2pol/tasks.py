"""The 18 tasks over the five stages, built from a corpus of facts.

The stage layout follows the benchmark's own scoring code: tasks 1-6 and 16-18 are multiple
choice (scored by exact match and F1), 7-10 summarize one paper section in policy language,
11-14 write one brief section from the whole paper, and 15 writes the whole brief (all
open-ended, scored against the reference brief and judged against the paper).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edgert.methods.sci2pol.simulate import DESIGNS, SECTIONS, Facts, brief, corrupt, \
    effect_phrase, paper


@dataclass
class Task:
    number: int
    name: str
    stage: str
    kind: str  # "mc" or "open"
    items: list[dict] = field(default_factory=list)


def _mc(prompt: str, options: list[str], answer: str, rng: np.random.Generator) -> dict:
    options = list(dict.fromkeys(options))
    order = rng.permutation(len(options))
    options = [options[i] for i in order]
    return {"prompt": prompt, "options": options, "answer": options.index(answer)}


def _text(sections: dict[str, str]) -> str:
    return " ".join(sections[s] for s in SECTIONS)


def build_empty() -> list[Task]:
    """The 18 tasks, without items."""
    tasks = [Task(1, "brief clause completion", "autocompletion", "mc"),
             Task(2, "paper sentence completion", "autocompletion", "mc"),
             Task(3, "section ordering", "autocompletion", "mc"),
             Task(4, "section classification", "understanding", "mc"),
             Task(5, "policy-relevant sentence", "understanding", "mc"),
             Task(6, "causal evidence from design", "understanding", "mc")]
    tasks += [Task(7 + i, f"summarize the {s}", "summarization", "open")
              for i, s in enumerate(SECTIONS)]
    tasks += [Task(11 + i, f"write the brief's {s}", "generation", "open")
              for i, s in enumerate(SECTIONS)]
    tasks += [Task(15, "write the whole brief", "generation", "open"),
              Task(16, "claim verification", "verification", "mc"),
              Task(17, "number check", "verification", "mc"),
              Task(18, "causal overclaim check", "verification", "mc")]
    return tasks


def build(corpus: list[Facts], seed: int) -> list[Task]:
    """The 18 tasks with an item per paper of the corpus."""
    rng = np.random.default_rng(seed)
    tasks = build_empty()
    by = {t.number: t for t in tasks}
    for f in corpus:
        p, b = paper(f), brief(f)
        claim_options = [effect_phrase(f, c, d) for c in (True, False) for d in (True, False)]
        by[1].items.append(_mc(f"{p['findings']} In short, {f.intervention}",
                               [f" {c} {f.outcome}" for c in claim_options],
                               f" {effect_phrase(f)} {f.outcome}", rng))
        wrong_n = [f.n * k for k in (2, 3)] + [f.n // 2]
        by[2].items.append(_mc(f"{b['methods']} {p['problem']} We used a {f.design} of",
                               [f" {n} {f.population}" for n in [f.n] + wrong_n],
                               f" {f.n} {f.population}", rng))
        perms = [list(SECTIONS)] + [list(rng.permutation(SECTIONS)) for _ in range(6)]
        by[3].items.append(_mc("Which order do these sections of a paper come in? "
                               + " ".join(f"({s}) {p[s]}" for s in rng.permutation(SECTIONS)),
                               [" " + " ".join(o) for o in perms], " " + " ".join(SECTIONS),
                               rng))
        section = SECTIONS[rng.integers(4)]
        by[4].items.append(_mc(f"{p[section]} This sentence is from the section on",
                               [f" {s}" for s in SECTIONS], f" {section}", rng))
        by[5].items.append(_mc("Which sentence recommends a policy action?",
                               [f" {b[s]}" for s in SECTIONS], f" {b['implications']}", rng))
        by[6].items.append(_mc(f"{p['methods']} Can this design show cause and effect?",
                               [" yes", " no"], " yes" if f.causal else " no", rng))
        for i, s in enumerate(SECTIONS):
            by[7 + i].items.append({"prompt": f"Summarize for policymakers: {p[s]}",
                                    "source": _text(p), "reference": b[s], "section": s,
                                    "facts": f})
            by[11 + i].items.append({"prompt": f"Paper: {_text(p)} Write the brief's {s}:",
                                     "source": _text(p), "reference": b[s], "section": s,
                                     "facts": f})
        by[15].items.append({"prompt": f"Paper: {_text(p)} Write the policy brief:",
                             "source": _text(p), "reference": _text(b), "section": "all",
                             "facts": f})
        kind = "causal" if rng.random() < 0.5 else "none"
        claim = corrupt(f, kind, rng, style=0)["findings"]
        by[16].items.append(_mc(f"{p['findings']} Claim: {claim} The claim is",
                                [" supported", " contradicted"],
                                " supported" if kind == "none" else " contradicted", rng))
        kind = "number" if rng.random() < 0.5 else "none"
        claim = corrupt(f, kind, rng, style=0)["findings"]
        by[17].items.append(_mc(f"{p['findings']} Brief: {claim} The brief's numbers are",
                                [" correct", " wrong"],
                                " correct" if kind == "none" else " wrong", rng))
        strong = brief(f, 0, effect_phrase(f, causal=True))["findings"]
        by[18].items.append(_mc(f"{p['methods']} {p['findings']} Brief: {strong} The brief's "
                                "causal wording is", [" justified", " an overclaim"],
                                " justified" if DESIGNS[f.design] else " an overclaim", rng))
    return tasks
