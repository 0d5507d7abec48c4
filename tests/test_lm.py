"""The one LM interface: a tiny GPT-2 trained here, read by path and through a real
OpenAI-compatible server on loopback, giving the same answers and scores both ways."""
import json
import urllib.request

import pytest

pytest.importorskip("transformers")

from edgert.runtime.plugin import DataError
from edgert.methods.lm.models import Endpoint, HFModel, open_lm, require
from edgert.methods.lm.serve import serving
from edgert.methods.lm.tiny import pretrain, save, tiny_gpt2, word_tokenizer

FACTS = [f"the {c} ball is in the {p} ." for c, p in
         (("red", "box"), ("blue", "bag"), ("green", "tin"))]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    tok = word_tokenizer(FACTS)
    lm = tiny_gpt2(tok)
    losses = pretrain(lm, tok, FACTS, steps=150, batch=8)
    assert losses[-1] < losses[0] / 5
    return save(lm, tok, tmp_path_factory.mktemp("lm") / "tiny")


def test_a_model_by_path_recalls_what_it_was_trained_on(model_dir):
    lm = open_lm(model_dir)
    assert isinstance(lm, HFModel)
    assert lm.generate(["the red ball is in the", "the green ball is in the"], 1) == ["box", "tin"]
    right, wrong = lm.logprob(["the blue ball is in the"] * 2, [" bag", " box"])
    assert right > -0.5 > wrong


def test_the_endpoint_answers_and_scores_as_the_model_does(model_dir):
    local = HFModel(model_dir)
    prompts, continuations = ["the red ball is in the", "the blue ball"], [" box", " is in the bag"]
    with serving(model_dir) as url:
        remote = open_lm(url)
        assert isinstance(remote, Endpoint) and remote.name == "tiny"
        assert remote.generate(prompts, 3) == local.generate(prompts, 3)
        assert remote.logprob(prompts, continuations) == pytest.approx(
            local.logprob(prompts, continuations), abs=1e-5)
        bad = urllib.request.Request(f"{url}/completions", data=b"{}",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(bad)
        assert e.value.code == 400 and "prompt" in json.loads(e.value.read())["error"]["message"]


def test_a_dead_endpoint_or_a_wrong_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="is the server running"):
        Endpoint("http://127.0.0.1:9/v1")
    with pytest.raises(DataError, match="not a transformers model folder"):
        HFModel(tmp_path)
    with pytest.raises(DataError, match="responder 'lm' needs lm: PATH"):
        require(None, "responder", "lm")
