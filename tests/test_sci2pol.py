"""The sci2pol harness: 18 tasks over five stages, the fact-checking judge on known
corruptions, the writers through the runner, and an LM answering through a real local
OpenAI-compatible server."""
import json

import numpy as np
import pytest

pytest.importorskip("rouge_score")
pytest.importorskip("transformers")

from edgert.runtime.plugin import DataError
from edgert.methods.lm.serve import serving
from edgert.methods.lm.tiny import pretrain, save, tiny_gpt2, word_tokenizer
from edgert.methods.sci2pol.data import read_bench
from edgert.methods.sci2pol.judge import FactChecker
from edgert.methods.sci2pol.simulate import corpus, corrupt, paper
from edgert.methods.sci2pol.tasks import build
from edgert.runtime.batch import run_batch
from edgert.runtime.methods import find


def test_eighteen_tasks_over_five_stages_with_answerable_items():
    tasks = build(corpus(5, 0), 0)
    assert [t.number for t in tasks] == list(range(1, 19))
    assert {t.stage for t in tasks} == {"autocompletion", "understanding", "summarization",
                                        "generation", "verification"}
    for t in tasks:
        assert len(t.items) == 5
        for item in t.items:
            if t.kind == "mc":
                assert 0 <= item["answer"] < len(item["options"]) >= 2
            else:
                assert item["reference"] and item["source"]


def test_the_judge_passes_the_truth_and_catches_each_corruption():
    judge, rng = FactChecker(), np.random.default_rng(1)
    for f in corpus(30, 1):
        source = " ".join(paper(f).values())
        reference = corrupt(f, "none", rng, style=0)["findings"]
        scores = {k: judge.score(source, corrupt(f, k, rng)["findings"], reference)
                  for k in ("none", "number", "causal", "omission")}
        assert scores["none"] == 1.0
        assert scores["number"] < 1.0 and scores["causal"] < 1.0 and scores["omission"] < 1.0


def test_rouge_and_embeddings_barely_move_where_the_judge_drops(tmp_path):
    configs = [{"responder": r, "papers": 12} for r in ("writer_none", "writer_number")]
    result = run_batch("sci2pol", configs, seeds=1, out=tmp_path, workers=1)
    assert not result["failed"], result["failed"]
    by = {e["config"]["responder"]: {k: v["mean"] for k, v in e["metrics"].items()}
          for e in result["summary"].values()}
    clean, wrong = by["writer_none"], by["writer_number"]
    assert clean["judge"] == 1.0 and clean["judge"] - wrong["judge"] > 0.2
    assert clean["rouge_l"] - wrong["rouge_l"] < 0.05
    assert clean["embedding"] - wrong["embedding"] < 0.05
    assert find("sci2pol").figures(result, tmp_path) == [tmp_path / "sci2pol.metrics.png"]
    assert (tmp_path / "sci2pol.metrics.png").stat().st_size > 5000


def test_an_lm_answers_every_task_through_a_local_endpoint(tmp_path):
    tasks = build(corpus(20, 7), 7)
    texts = [i["prompt"] + (i["options"][i["answer"]] if t.kind == "mc" else " " + i["reference"])
             for t in tasks for i in t.items]
    tok = word_tokenizer(texts)
    lm = tiny_gpt2(tok, context=256)
    pretrain(lm, tok, texts, steps=40, batch=8)
    folder = save(lm, tok, tmp_path / "tiny")
    with serving(folder) as url:
        config = {"responder": "lm", "papers": 4, "lm": url, "lm_judge": True,
                  "max_new_tokens": 4}
        result = run_batch("sci2pol", [config], seeds=1, out=tmp_path / "run", workers=1)
    assert not result["failed"], result["failed"]
    metrics = next(iter(result["summary"].values()))["metrics"]
    assert {f"task{n:02d}" for n in range(1, 19)} <= set(metrics)
    assert all(0 <= metrics[k]["mean"] <= 1 for k in ("mc_f1", "judge", "lm_judge", "rouge_l"))


def test_the_benchmarks_own_task_files_are_read_and_scored(tmp_path):
    bench = tmp_path / "bench"
    bench.mkdir()
    mc = {"id": 1, "query": "Which section is this from? (A) problem (B) findings (C) methods",
          "answer": "B"}
    (bench / "task4.jsonl").write_text(json.dumps(mc) + "\n" + json.dumps(mc | {"id": 2}) + "\n")
    summary = {"id": 1, "query": "Summarize: Cooling centres reduced hospital visits by 12 "
               "percent.", "answer": "Cooling centres cut hospital visits by 12 percent."}
    (bench / "task7.jsonl").write_text(json.dumps(summary) + "\n")
    tasks = read_bench(bench)
    assert [t.number for t in tasks] == [4, 7]
    assert tasks[0].items[0]["options"] == [" A", " B", " C"] and tasks[0].items[0]["answer"] == 1
    result = run_batch("sci2pol", [{"responder": "extractive", "data": str(bench)}], seeds=1,
                       out=tmp_path / "run", workers=1)
    assert not result["failed"], result["failed"]
    metrics = result["cells"][0]["metrics"]
    assert set(metrics) >= {"task04", "task07", "mc_f1", "rouge_l", "judge"}
    assert metrics["judge"] == 1.0, "the copied source sentence is faithful"
    (bench / "task16.jsonl").write_text('{"id": 1, "query": "(A) yes (B) no", "answer": "C"}\n')
    with pytest.raises(DataError, match=r"task16.jsonl: line 1: the answer 'C'"):
        read_bench(bench)
    with pytest.raises(DataError, match="no task1.jsonl"):
        read_bench(tmp_path / "run")
