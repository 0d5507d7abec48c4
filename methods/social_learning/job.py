"""One cell of the social_learning job: every game, `generations` agents in a row, each
living `lives` lives of at most `max_steps` moves, under one advice condition.

Conditions: `none` (each agent alone), `chain` (each agent reads the advice the one before
it wrote: iterated learning), `misleading` (the first agent reads advice that names a wrong
effect for every colour, deadly ones called worth points; the chain goes on from there).

Metrics, means over games, per generation k (1-based): `deaths_gk` (lives lost),
`first_score_gk` (moves until the first point, counting every life; `lives * max_steps`
if none), `wins_gk` (lives that took every point), `knowledge_gk` (mean posterior on the
true effects after living). `_first` and `_last` name generations 1 and the last.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from edgert.runtime.plugin import DataError
from edgert.methods.lm.models import require
from edgert.methods.social_learning.agents import Learner, act
from edgert.methods.social_learning.games import EFFECTS, GAMES, Game, step
from edgert.methods.social_learning.speaker import ADVISE, LMSpeaker, MiniLMSpeaker
from edgert.methods.threads import one_thread

CONDITIONS = ("none", "chain", "misleading")


class Config(BaseModel):
    condition: str = Field("chain", pattern="|".join(CONDITIONS))
    generations: int = Field(5, ge=1)
    lives: int = Field(1, ge=1)
    max_steps: int = Field(40, ge=1)
    beta: float = Field(30.0, gt=0)
    lapse: float = Field(0.1, ge=0, le=1)
    speaker: str = Field("minilm", pattern="minilm|lm")
    lm: str | None = None
    games: list[str] | None = None


def grid(quick: bool) -> list[dict]:
    """Each condition, and misleading advice to a speaker that trusts advice fully (no
    lapse); the full grid lets agents live longer chains."""
    gens = 5 if quick else 10
    return [Config(condition=c, generations=gens).model_dump() for c in CONDITIONS] + [
        Config(condition="misleading", lapse=0.0, generations=gens).model_dump()]


def run(config: dict, seed: int, out: Path) -> dict[str, float]:
    cfg = Config(**config)
    names = {g.name for g in GAMES}
    if cfg.games and not set(cfg.games) <= names:
        raise DataError(f"games {sorted(set(cfg.games) - names)}: not games here; choose "
                        f"from {sorted(names)}")
    if cfg.speaker == "lm":
        require(cfg.lm, "speaker", "lm")
    with one_thread():
        return _run(cfg, seed, out)


def misleading(game: Game, rng: np.random.Generator) -> list[str]:
    wrong = {"kill": "score", "score": "kill"}
    out = []
    for colour, effect in game.rules.items():
        lie = wrong.get(effect) or [e for e in EFFECTS if e != effect][rng.integers(5)]
        out.append(ADVISE[lie].format(c=colour))
    return out


def live(game: Game, learner: Learner, cfg: Config, rng: np.random.Generator) -> dict:
    deaths = wins = moves = 0
    first_score = None
    for _ in range(cfg.lives):
        s = game.start(rng)
        for _ in range(cfg.max_steps):
            move = act(learner, s, rng)
            before = s
            s, outcome = step(s, move, game.rules)
            learner.observe(before, move, outcome)
            moves += 1
            if outcome == "scored" and first_score is None:
                first_score = moves
            if s.dead or s.score == game.goal():
                break
        deaths += s.dead
        wins += s.score == game.goal()
    return {"deaths": deaths, "wins": wins, "knowledge": learner.knowledge(game.rules),
            "first_score": first_score or cfg.lives * cfg.max_steps}


def _run(cfg: Config, seed: int, out: Path) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    if cfg.speaker == "lm":
        from edgert.methods.lm.models import open_lm

        speaker = LMSpeaker(open_lm(cfg.lm), cfg.lapse)
    else:
        speaker = MiniLMSpeaker(cfg.beta, cfg.lapse)
    games = [g for g in GAMES if not cfg.games or g.name in cfg.games]
    table = {}
    for game in games:
        advice = misleading(game, rng) if cfg.condition == "misleading" else []
        rows = []
        for _ in range(cfg.generations):
            learner = Learner(list(game.rules))
            learner.hear(advice, speaker)
            rows.append(live(game, learner, cfg, rng) | {"advice": advice})
            advice = [] if cfg.condition == "none" else learner.advise()
        table[game.name] = rows
    (out / "generations.json").write_text(json.dumps(table, indent=1))
    metrics = {}
    for k in range(cfg.generations):
        for m in ("deaths", "first_score", "wins", "knowledge"):
            metrics[f"{m}_g{k + 1}"] = float(np.mean([table[g][k][m] for g in table]))
    for m in ("deaths", "first_score", "wins", "knowledge"):
        metrics[f"{m}_first"] = metrics[f"{m}_g1"]
        metrics[f"{m}_last"] = metrics[f"{m}_g{cfg.generations}"]
    return metrics
