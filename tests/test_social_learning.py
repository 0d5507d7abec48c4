"""The social_learning job: the world-model program on known moves, the learner's posterior
from experience and from advice, the speaker on paraphrases, and the conditions through the
runner."""
import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from edgert.methods.lm.models import open_lm
from edgert.methods.lm.tiny import pretrain, save, tiny_gpt2, word_tokenizer
from edgert.methods.social_learning.agents import Learner
from edgert.methods.social_learning.games import EFFECTS, GAMES, State, step
from edgert.methods.social_learning.speaker import ADVISE, DESCRIBE, LMSpeaker, MiniLMSpeaker
from edgert.runtime.batch import run_batch
from edgert.runtime.methods import find

RULES = {"red": "kill", "blue": "push", "green": "key", "yellow": "door", "purple": "score"}


def test_the_program_runs_each_effect():
    s = State((3, 3), ((3, 4, "blue"), (2, 3, "purple"), (4, 3, "red"), (1, 1, "yellow"),
                       (3, 2, "green")))
    right, up, down, left = (0, 1), (-1, 0), (1, 0), (0, -1)
    pushed, what = step(s, right, RULES)
    assert what == "pushed" and pushed.agent == (3, 4) and pushed.at((3, 5)) == "blue"
    scored, what = step(s, up, RULES)
    assert what == "scored" and scored.score == 1 and scored.at((2, 3)) is None
    assert step(s, down, RULES)[0].dead
    opened, what = step(s, left, RULES)
    assert what == "opened" and opened.at((1, 1)) is None, "the key opened the door"
    assert len(GAMES) == 10 and all(set(g.rules.values()) <= set(EFFECTS) for g in GAMES)


def test_experience_and_advice_move_the_posterior_and_experience_wins():
    s = State((3, 3), ((3, 4, "red"),))
    learner = Learner(["red"])
    speaker = MiniLMSpeaker()
    learner.hear([ADVISE["score"].format(c="red")], speaker)
    assert EFFECTS[int(learner.posterior("red").argmax())] == "score"
    learner.observe(s, (0, 1), step(s, (0, 1), {"red": "kill"})[1])
    assert EFFECTS[int(learner.posterior("red").argmax())] == "kill", "one death overrides a lie"
    for effect in EFFECTS:
        p = np.exp(speaker.loglik(ADVISE[effect].format(c="blue"), "blue"))
        assert EFFECTS[int(p.argmax())] == effect, f"the speaker reads '{effect}' advice"


def test_advice_chains_cut_deaths_and_time_to_the_first_point(tmp_path):
    configs = [{"condition": c, "generations": 3} for c in ("none", "chain", "misleading")]
    result = run_batch("social_learning", configs, seeds=2, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    by = {e["config"]["condition"]: {k: v["mean"] for k, v in e["metrics"].items()}
          for e in result["summary"].values()}
    assert by["chain"]["deaths_last"] < by["none"]["deaths_last"]
    assert by["chain"]["first_score_last"] < by["none"]["first_score_last"] / 2
    assert by["misleading"]["knowledge_first"] < by["none"]["knowledge_first"]
    assert by["misleading"]["knowledge_last"] > by["misleading"]["knowledge_first"]
    path = tmp_path / "social_learning.generations.png"
    assert find("social_learning").figures(result, tmp_path) == [path]


def test_an_lm_speaker_reads_advice_through_the_interface(tmp_path):
    lines = [f"Rule: {DESCRIBE[e].format(c='red')}. Advice: {ADVISE[e].format(c='red')}"
             for e in EFFECTS] * 4
    tok = word_tokenizer(lines)
    lm = tiny_gpt2(tok, context=64)
    pretrain(lm, tok, lines, steps=150, batch=8)
    speaker = LMSpeaker(open_lm(save(lm, tok, tmp_path / "tiny")))
    for effect in ("kill", "score"):
        p = np.exp(speaker.loglik(ADVISE[effect].format(c="red"), "red"))
        assert EFFECTS[int(p.argmax())] == effect and p.sum() == pytest.approx(1.0)
