"""BOLT end to end on this machine: a tiny training run, its router, the bundle in ONNX Runtime,
`pipelines/robot.yaml` as a ZeroMQ service with robots asking over REQ, and the Robo2VLM-1
loader on a parquet file written here."""
import json
import os
import subprocess
import threading

import numpy as np
import pytest

from edgert import pipelines
from edgert.methods.bolt import request
from edgert.runtime.plugin import Data
from edgert.methods.bolt.data import (TARGET, VQARow, as_rows, from_rows, generate, load_robo2vlm,
                                      split, write_robo2vlm)
from edgert.methods.bolt.export import export
from edgert.methods.bolt.evaluate import evaluate
from edgert.methods.bolt.figures import figures
from edgert.methods.bolt.export import cached_bundle
from edgert.methods.bolt.policy import load
from edgert.methods.bolt.train import Config, train
from edgert.cli.console import results_table
from edgert.runtime.pipeline import Pipeline
from edgert.streams.zmq_link import Requester, free_endpoint

TINY = Config(episodes=12, frames=3, per_frame=3, broad_episodes=12, pretrain_steps=15,
              finetune_steps=8, timed_requests=20)


@pytest.fixture(scope="module")
def trained(edgert_cache):
    """A tiny BOLT trained here in seconds, where `edgert demo robot` looks for it."""
    folder = edgert_cache / "bolt"
    train(folder, config=TINY)
    assert cached_bundle() == folder / "bundle"
    return folder


def test_training_saves_models_router_and_memory(trained):
    router, memory, t0, mix = load(trained)
    assert set(router.gains) == {"hr", "rag", "qd"} and router.threshold >= 0
    assert t0 > 0 and 0 < mix < 1 and len(memory.keys) > 0
    assert (trained / "bundle" / "manifest.json").exists()


def _service(trained):
    endpoint = free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("robot"), [
        f"requests.endpoint={endpoint}", f"reply.endpoint={endpoint}",
        f"log.endpoint={free_endpoint()}", f"answer.bundle={trained / 'bundle'}"])
    return pipe, endpoint


def test_robot_service_answers_requests_within_their_budgets(trained):
    qa = generate(6, 2, 2, TARGET, 0.15, seed=50)
    pipe, endpoint = _service(trained)
    pipe.start()
    replies: dict[int, list[dict]] = {}

    def robot(k: int) -> None:
        with Requester(endpoint) as req:
            replies[k] = []
            for i, q in enumerate(qa.questions[k::2]):
                budget = [0.5, 1.0, 6.0][i % 3]
                chunk = request.encode(qa.frames[q.frame].image, q.text, list(q.options),
                                       budget=budget, seq=i)
                replies[k].append((q, budget, request.read(req.request(chunk, 20.0))))

    try:
        robots = [threading.Thread(target=robot, args=(k,)) for k in range(2)]
        for r in robots:
            r.start()
        for r in robots:
            r.join(120)
        with Requester(endpoint) as req:
            bad = request.read(req.request(request.encode(
                np.zeros((4, 4, 3), np.uint8), "what is the meaning of this", ["a", "b"]), 20))
        stats = pipe.nodes["answer"].stats()
    finally:
        pipe.stop()
    bodies = [r for k in replies for r in replies[k]]
    assert len(bodies) == len(qa.questions)
    for q, budget, body in bodies:
        assert body["answer"] in q.options and 0 < body["confidence"] <= 1
        assert body["actions"][0]["action"] == "first"
        if budget < 1.0:
            assert body["partial"] and body["why"] == "over_budget"
        else:
            assert body["spent"] <= budget + 1e-9
        for step in body["actions"][1:]:
            assert step["action"] in body["trace"]
    assert "matches none" in bad["error"] and stats["rejected"] == 1
    assert stats["answered"] == len(qa.questions)


def test_deadline_gives_the_best_answer_so_far(trained):
    from edgert.methods.bolt.node import Answer
    from edgert.streams import local_clock

    node = Answer("answer", Answer.Params(bundle=trained / "bundle"))
    node.start()
    qa = generate(3, 1, 1, {"left_of": 1}, 0.0, seed=51)
    q = qa.questions[0]
    body = node.answer(q, qa.frames[q.frame].image, 10.0, 1e-6, local_clock(),
                       plan=["qd", "hr"])
    assert body["partial"] and body["why"] == "deadline" and len(body["actions"]) == 1
    full = node.answer(q, qa.frames[q.frame].image, 10.0, 60.0, local_clock(), plan=["qd"])
    assert [s["action"] for s in full["actions"]] == ["first", "qd"]
    assert [t["question"] for t in full["trace"]["qd"][:2]] == [
        f"where is the {q.args[0]} block", f"where is the {q.args[1]} block"]


def test_robo2vlm_parquet_rows_round_trip_and_split_by_image(tmp_path):
    rows = as_rows(generate(10, 2, 2, TARGET, 0.15, seed=52))
    path = tmp_path / "robo2vlm.parquet"
    write_robo2vlm(path, rows)
    back = load_robo2vlm(path)
    assert [(r.question, r.choices, r.answer) for r in back] == [
        (r.question, list(r.choices), r.answer) for r in rows]
    assert np.array_equal(back[0].image, rows[0].image)
    qa = from_rows(back)
    assert len(qa.frames) == len({r.id for r in back}) and len(qa) == len(back)
    parts = split(qa, (0.5, 0.25, 0.25), 0)
    images = [{q.frame for q in part.questions} for part in parts]
    assert all(images) and not (images[0] & images[1] or images[1] & images[2]
                                or images[0] & images[2])
    assert sum(len(part) for part in parts) == len(back)


def _free_text(rows: list[VQARow]) -> list[VQARow]:
    """Rows as a person writes them: no template, capitals, punctuation, six choices."""
    return [VQARow(r.id, r.image, f"Looking at the robot's workspace: {r.question}?",
                   [c.capitalize() for c in r.choices] + ["It cannot be told"], r.answer)
            for r in rows]


def test_a_student_trained_on_free_text_rows_answers_free_text_live(tmp_path):
    path = tmp_path / "mine.parquet"
    write_robo2vlm(path, _free_text(as_rows(generate(24, 3, 3, TARGET, 0.15, seed=60))))
    checkpoint = train(tmp_path / "model", config=TINY, data=Data((path,)))
    bundle = export(tmp_path / "model" / "bundle", checkpoint)
    words = bundle.manifest.preprocessing["vocabulary"]
    assert "<unk>" in words and "workspace" in words and "cannot" in words
    assert bundle.manifest.preprocessing["max_question"] > 10  # the longer questions fit
    pipe, endpoint = _service(tmp_path / "model")
    pipe.start()
    try:
        image = generate(1, 1, 1, TARGET, 0.15, seed=61)
        frame = next(iter(image.frames.values())).image
        choices = ["Open", "Closed", "Nobody knows"]
        with Requester(endpoint) as req:
            reply = request.read(req.request(request.encode(
                frame, "What state is the gripper in, would you say?", choices, budget=6.0),
                20.0))
    finally:
        pipe.stop()
    assert "error" not in reply, reply
    assert reply["answer"] in choices and 0.0 <= reply["confidence"] <= 1.0


def test_evaluate_on_a_users_rows_reports_every_model_and_policy(tmp_path):
    path = tmp_path / "mine.parquet"
    write_robo2vlm(path, _free_text(as_rows(generate(24, 3, 3, TARGET, 0.15, seed=62))))
    result = evaluate(config=TINY, data=Data((path,)))
    assert result["config"]["data"] == (str(path),)
    for name in ("teacher", "odd", "routed", "never"):
        assert 0.0 <= result["results"][name]["accuracy"] <= 1.0, name


def test_robo2vlm_loader_names_what_is_wrong(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "x", "question": "q", "choices": "['a', 'b']",
                                          "correct_answer": 5, "image": b"nope"}]), path)
    with pytest.raises(ValueError, match="correct_answer 5"):
        load_robo2vlm(path)
    pq.write_table(pa.Table.from_pylist([{"id": "x", "question": "q"}]), path)
    with pytest.raises(ValueError, match="missing column"):
        load_robo2vlm(path)
    result = subprocess.run(["edgert", "train", "bolt", "--data", str(path), "--out",
                             str(tmp_path / "m")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{path}: missing column" in result.stderr


def test_demo_robot_reports_accuracy_spend_and_latency(trained, tmp_path):
    out = tmp_path / "robot.json"
    result = subprocess.run(["edgert", "demo", "robot", "--duration", "6", "--report", str(out)],
                            capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text())
    m = report["metrics"]
    assert m["requests"] >= 10 and m["errors"] == 0, report["errors"]
    assert 0.0 <= m["accuracy"] <= 1.0 and m["over_budget"] == 0
    assert m["mean_spent"] <= m["mean_budget"] and m["partial"] >= 1
    assert m["first_p50_ms"] > 0 and m["client_p99_ms"] > 0


def test_evaluate_reports_every_model_and_policy(trained, tmp_path):
    result = evaluate(config=TINY)
    assert figures(result, tmp_path / "bolt.json") == [tmp_path / "bolt.png"]
    assert list(result["results"]) == ["teacher", "zero_shot", "ce_only", "token_kd", "odd",
                                       "routed", "never", "always_hr", "always_rag",
                                       "always_qd", "random"]
    for name, r in result["results"].items():
        assert 0.0 <= r["accuracy"] <= 1.0 and r["invalid_option_rate"] == 0.0, name
        assert 0.0 <= r["ece"] <= 1.0 and r["nll"] > 0 and 0 <= r["aurc"] <= 1, name
    routed = result["results"]["routed"]["avg_cost"]
    for name in ("always_hr", "always_rag", "always_qd", "random"):
        assert result["results"][name]["avg_cost"] <= routed + 0.05, name
    assert result["results"]["never"]["avg_cost"] == 0.0
    assert set(result["latency"]) == {"first", "hr", "rag", "qd"}
    assert result["peak_memory_mb"]["teacher"] > 0
    assert (tmp_path / "bolt.png").stat().st_size > 10_000
    assert results_table(result).row_count == 11
    assert set(result["risk_coverage"]) == set(result["results"])
    coverage, risk = zip(*result["risk_coverage"]["routed"])
    assert coverage[-1] == 1.0 and np.isclose(risk[-1], 1 - result["results"]["routed"]["accuracy"])


def test_bench_feeds_the_robot_service_from_a_simulated_robot(trained):
    from edgert.benchmarks.pipelines import Config as BenchConfig, run_pipelines

    cfg = BenchConfig(seconds=3.0, repeats=1, method_seconds=3.0)
    out = run_pipelines(True, config=cfg, paths=[pipelines.find("robot")])
    robot = out["results"]["robot"]
    assert "skipped" not in robot, robot
    answered = robot["nodes"]["answer"]["processed"]
    assert answered >= 20, "a robot at 10 Hz for 3 s"
    assert robot["end_to_end"]["count"] == 2 * answered, "each answer reaches reply and log"
    assert 0 < robot["end_to_end"]["p50_ms"] < robot["end_to_end"]["max_ms"]
    assert robot["dropped"] == 0 and not robot["quarantined"]
    assert robot["cpu_pct_mean"] is not None
