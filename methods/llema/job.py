"""One cell of the llema job: one search on one task, `generations` rounds of `per_round`
candidates each, every candidate scored by the surrogate oracle.

Searches: `llema` (rule proposer with success and failure memories), `rules` (the same rules
on the seed compounds only, no memory), `random`, and `lm` (the LM at `Config.lm`, a
transformers folder or an OpenAI-compatible URL, with memories).

Per candidate: `satisfaction` = 1 / (1 + the summed relative violation of the task's scored
bounds), `stability` = exp(-e_hull / 0.1 eV/atom); its score is their product. A hit is a
novel (not a seed), smact-valid candidate that meets every scored bound with e_hull <= 0.1
eV/atom. Metrics: `hit_rate` (hits per candidate evaluated), `hits`, `hypervolume` (of the
novel valid candidates' (quality, stability) points against the origin; `quality` below), `best_score`,
`valid_rate`, `evaluated`, and the band-gap proxy's held-out error `gap_mae` (eV) beside the
error of always predicting the mean, `gap_mae_mean`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from edgert.methods.llema.oracle import Oracle, Props
from edgert.methods.llema.proposers import LMProposer, Memory, RandomProposer, RuleProposer
from edgert.methods.llema.tasks import TASKS, Task
from edgert.methods.lm.models import require
from edgert.methods.threads import one_thread

SEARCHES = ("llema", "rules", "random", "lm")
STABLE = 0.1  # eV/atom


class Config(BaseModel):
    task: str = Field("wide_gap_semiconductors", pattern="|".join(TASKS))
    search: str = Field("llema", pattern="|".join(SEARCHES))
    generations: int = Field(5, ge=1)
    per_round: int = Field(6, ge=1)
    lm: str | None = None


def grid(quick: bool) -> list[dict]:
    """Each search but the LM's on the wide-gap task; the full grid runs every task with a
    scored property beyond stability, for longer."""
    tasks = ["wide_gap_semiconductors"] if quick else [
        n for n, t in TASKS.items() if set(t.scored) - {"e_hull"}]
    gens = 5 if quick else 10
    return [Config(task=t, search=s, generations=gens).model_dump()
            for t in tasks for s in SEARCHES if s != "lm"]


def quality(task: Task, p: Props) -> float:
    """How far past its bounds a candidate's scored properties go, averaged: per property 0
    at a bound's own distance on the wrong side, 0.5 on the bound, 1 at that distance past
    it (a range takes its nearer edge). Unlike satisfaction it does not stop at the bounds,
    so the Pareto front keeps moving."""
    parts = []
    for prop in task.scored:
        lo, hi = task.bounds[prop]
        x = getattr(p, prop)
        scale = max(abs(v) for v in (lo, hi, 1.0) if v is not None)
        sides = ([(x - lo) / scale] if lo is not None else []) + \
            ([(hi - x) / scale] if hi is not None else [])
        parts.append(float(np.clip(min(sides) + 1, 0, 2)) / 2 if math.isfinite(x) else 0.0)
    return float(np.mean(parts))


def score(task: Task, p: Props) -> tuple[float, float]:
    """(satisfaction, stability) of a valid candidate."""
    violation = 0.0
    for prop in task.scored:
        lo, hi = task.bounds[prop]
        x = getattr(p, prop)
        if not math.isfinite(x):
            violation += 1.0
            continue
        scale = max(abs(v) for v in (lo, hi, 1.0) if v is not None)
        violation += (max(0.0, lo - x) if lo is not None else 0.0) / scale
        violation += (max(0.0, x - hi) if hi is not None else 0.0) / scale
    return 1.0 / (1.0 + violation), math.exp(-max(p.e_hull, 0.0) / STABLE)


def hypervolume(points: list[tuple[float, float]]) -> float:
    """The area dominated by 2-D points (both maximized) above the origin."""
    area, best_y = 0.0, 0.0
    for x, y in sorted(points, key=lambda p: -p[0]):
        if y > best_y:
            area += x * (y - best_y)
            best_y = y
    return area


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    if cfg.search == "lm":
        require(cfg.lm, "search", "lm")
    with one_thread():
        return _run(cfg, seed, out)


def _proposer(cfg: Config, memory: Memory):
    if cfg.search == "llema":
        return RuleProposer(memory)
    if cfg.search == "rules":
        return RuleProposer(None)
    if cfg.search == "random":
        return RandomProposer()
    from edgert.methods.lm.models import open_lm

    return LMProposer(open_lm(cfg.lm), memory)


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    task, rng = TASKS[cfg.task], np.random.default_rng(seed)
    oracle, memory = Oracle(), Memory()
    proposer, seen, rows = _proposer(cfg, memory), set(), []
    for generation in range(cfg.generations):
        for cand in proposer.propose(task, cfg.per_round, rng, seen):
            p = oracle(cand)
            sat, stab = score(task, p) if p.valid else (0.0, 0.0)
            hit = (p.valid and sat == 1.0 and p.e_hull <= STABLE
                   and cand.formula not in task.seeds)
            failure = ("invalid (smact)" if not p.valid else
                       f"unstable (e_hull {p.e_hull:.2f})" if p.e_hull > STABLE else
                       None if sat == 1.0 else "misses the bounds")
            memory.add(cand, sat * stab, failure)
            rows.append(p.as_dict() | {"generation": generation, "satisfaction": sat,
                                       "stability": stab, "hit": hit,
                                       "quality": quality(task, p) if p.valid else 0.0})
    (out / "candidates.json").write_text(json.dumps(rows, indent=1))
    valid = [r for r in rows if r["valid"] and r["formula"] not in task.seeds]
    n = max(len(rows), 1)
    return {"hit_rate": sum(r["hit"] for r in rows) / n,
            "hits": float(sum(r["hit"] for r in rows)),
            "hypervolume": hypervolume([(r["quality"], r["stability"]) for r in valid]),
            "best_score": max((r["satisfaction"] * r["stability"] for r in valid), default=0.0),
            "valid_rate": len(valid) / n, "evaluated": float(len(rows)),
            "gap_mae": oracle.gap.mae, "gap_mae_mean": oracle.gap.spread}
