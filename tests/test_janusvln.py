"""JanusVLN: the houses, the expert and the gymnasium env, the R2R loader on files written
here, the dual memory (the step-by-step cache against the whole-episode pass), the bundle
(ONNX steps equal to torch's), the live nav service on real ZeroMQ, and evaluate's keys."""
import json

import gymnasium as gym
import numpy as np
import pytest
import torch

from edgert import pipelines
from edgert.runtime.plugin import Data, DataError
from edgert.methods.janusvln.baselines import VARIANTS, make_agent
from edgert.methods.janusvln.data import read, read_r2r, write_r2r
from edgert.methods.janusvln.demo import overrides
from edgert.methods.janusvln.env import NavEnv
from edgert.methods.janusvln.episodes import ACTIONS, STOP, episodes, tokenize
from edgert.methods.janusvln.evaluate import Config, evaluate
from edgert.methods.janusvln.export import cached_bundle
from edgert.methods.janusvln.figures import figures
from edgert.methods.janusvln.memory import KVCache
from edgert.methods.janusvln.metrics import episode_metrics
from edgert.methods.janusvln.model import Geometry, Memory
from edgert.methods.janusvln.navigate import Navigator
from edgert.methods.janusvln.node import BundleNavigator, request
from edgert.methods.janusvln.train import Config as TrainConfig
from edgert.methods.janusvln.train import load, save, train_all
from edgert.export.bundle import Bundle
from edgert.runtime.json_request import read as read_reply
from edgert.runtime.pipeline import Pipeline
from edgert.streams.zmq_link import Requester, free_endpoint

TINY = dict(houses=3, unseen=2, episodes_per_house=2, eval_per_house=1, semantic_steps=3,
            geometry_steps=3, policy_steps=3, dagger_rounds=1, dagger_episodes=2,
            dagger_steps=2, batch=2, max_frames=24, policy_frames=4)


@pytest.fixture(scope="module")
def cache(edgert_cache):
    """A tiny model trained here in seconds, as this machine's cached one."""
    cfg = TrainConfig(**TINY)
    geometry, agents = train_all(cfg, ("janusvln",))
    save(edgert_cache / "janusvln", cfg, geometry, agents, {"data": "simulated"})
    return edgert_cache


def test_expert_reaches_every_goal_and_the_env_is_a_gymnasium_env():
    eps = episodes([0, 1, 2, 10_000], 3, seed=0)
    env = NavEnv([0])
    assert isinstance(env, gym.Env)
    for e in eps:
        obs, info = env.reset(options={"episode": e})
        assert obs["rgb"].shape == (32, 32, 3) and obs["depth"].shape == (32, 32)
        assert info["instruction"].endswith(e.instruction.split()[-1])
        for action in e.actions[:-1]:
            obs, reward, done, truncated, _ = env.step(action)
            assert not done
        obs, reward, done, _, info = env.step(STOP)
        assert done and info["success"] and reward == 10
    assert all("stop by the" in e.instruction for e in eps)


def test_a_wall_stops_the_agent_and_wrong_stops_fail():
    env = NavEnv([0])
    e = episodes([0], 1, seed=3)[0]
    env.reset(options={"episode": e})
    for _ in range(60):                      # walk straight into whatever wall is ahead
        env.step(1)
    before = env.pose
    env.step(1)
    assert env.pose == before
    _, _, done, _, info = env.step(STOP)
    assert done and info["success"] == (np.hypot(before[0] - e.goal[0],
                                                 before[1] - e.goal[1]) <= 1.0)


def test_metrics_of_the_expert_path_and_of_a_path_that_stops_short():
    e = episodes([0], 1, seed=1)[0]
    perfect = episode_metrics(e.path, e.path, e.goal, True)
    assert perfect == pytest.approx({"sr": 1, "spl": 1, "ne": perfect["ne"], "os": 1,
                                     "ndtw": 1})
    short = episode_metrics(e.path[:2], e.path, e.goal, True)
    assert short["sr"] == 0 and short["spl"] == 0 and short["ne"] > 1 and short["ndtw"] < 1


@pytest.mark.parametrize("memory", [Memory(2, 8), Memory(0, 10), Memory(1, 3)])
def test_the_step_cache_holds_exactly_the_whole_episode_pass(memory):
    torch.manual_seed(0)
    encoder = Geometry().encoder.eval()
    frames = torch.rand(1, 15, 3, 32, 32)
    with torch.no_grad():
        whole = encoder.sequence(frames, memory.allowed(15))[0]           # (15, 64, D)
        cache = KVCache(len(encoder.blocks), encoder.tokens, encoder.width, memory)
        for i in range(15):
            tokens, kv = encoder.step(frames[:, i], torch.from_numpy(cache.kv),
                                      torch.from_numpy(cache.valid))
            cache.add(kv.numpy())
            torch.testing.assert_close(tokens[0], whole[i], atol=1e-5, rtol=1e-4)
    assert cache.nbytes == KVCache(2, 64, 64, memory).nbytes   # never grew


def test_sinks_stay_and_the_window_rolls():
    cache = KVCache(1, 1, 1, Memory(2, 3))
    slots = []
    for i in range(9):
        slots.append(cache.slot())
        cache.add(np.full((1, 2, 1, 1), i, np.float32))
    assert slots == [0, 1, 2, 3, 4, 2, 3, 4, 2]
    assert cache.kv[0, 0, :, 0, 0].tolist() == [0, 1, 8, 6, 7]
    allowed = Memory(2, 3).allowed(9)
    assert allowed[8].nonzero().ravel().tolist() == [0, 1, 5, 6, 7, 8]


def test_every_variant_runs_frame_by_frame_and_only_fixed_memories_stay_flat():
    geometry = Geometry().eval().requires_grad_(False)
    rgb = np.random.default_rng(0).integers(0, 255, (32, 32, 3), dtype=np.uint8)
    held = {}
    for name in VARIANTS:
        navigator = Navigator(make_agent(name, geometry))
        navigator.reset("walk past the sofa and stop by the lamp")
        sizes = []
        for _ in range(14):
            assert navigator.act(rgb) in range(len(ACTIONS))
            sizes.append(navigator.state_bytes)
        held[name] = sizes
    for name in ("janusvln", "semantic_only", "window_no_sink"):
        assert held[name][0] == held[name][-1] > 0, name
    assert held["semantic_only"][0] < held["janusvln"][0]     # no geometric memory
    for name in ("full_history", "explicit_memory"):
        assert held[name][-1] == 14 * held[name][0], name
    with pytest.raises(ValueError, match="unknown JanusVLN variant"):
        make_agent("nope", geometry)


def test_tokenize_pads_and_marks_unknown_words():
    ids = tokenize("Walk past the SOFA, then the spaceship")
    assert ids.shape == (40,) and ids[6] == 1 and (ids[7:] == 0).all()


def test_r2r_files_round_trip_and_unavailable_scenes_are_named(tmp_path):
    eps = episodes([0, 1], 2, seed=5)
    path = write_r2r(eps, tmp_path / "val_unseen.json.gz")
    back = read(Data((path,)))
    assert [b.instruction for b in back] == [e.instruction for e in eps]
    for a, b in zip(eps, back):
        assert b.house == a.house and b.actions == a.actions
        assert np.allclose(b.start, a.start) and np.allclose(b.goal, a.goal)
    body = json.loads(json.dumps({"episodes": [{
        "episode_id": 7, "trajectory_id": 1, "scene_id": "mp3d/17DRP5sb8fy/17DRP5sb8fy.glb",
        "start_position": [0, 0, 0], "start_rotation": [0, 0, 0, 1],
        "goals": [{"position": [1, 0, 1], "radius": 3.0}],
        "instruction": {"instruction_text": "walk"}, "reference_path": [[0, 0, 0]]}]}))
    mp3d = tmp_path / "mp3d.json"
    mp3d.write_text(json.dumps(body))
    with pytest.raises(DataError, match="17DRP5sb8fy.*not available here"):
        read_r2r(mp3d)
    del body["episodes"][0]["goals"]
    mp3d.write_text(json.dumps(body))
    with pytest.raises(DataError, match=r"episode 7.*missing field\(s\) \['goals'\]"):
        read_r2r(mp3d)
    with pytest.raises(DataError, match="not one JanusVLN reads"):
        read(Data((path,), format="xdf"))


def test_bundle_steps_match_torch_and_the_nav_service_answers_a_robot(cache):
    bundle = cached_bundle()
    _, agents, _ = load(cache / "janusvln" / "checkpoint.pt")
    torch_nav = Navigator(agents["janusvln"])
    onnx_nav = BundleNavigator(Bundle.load(bundle))
    e = episodes([10_000], 1, seed=2)[0]
    env = NavEnv([10_000])
    obs, _ = env.reset(options={"episode": e})
    torch_nav.reset(e.instruction)
    onnx_nav.reset(e.instruction)
    for _ in range(14):                        # past the window: the ring overwrites slots
        onnx_nav.act(obs["rgb"])
        torch_nav.act(obs["rgb"])
        np.testing.assert_allclose(onnx_nav.logits, torch_nav.logits, atol=1e-3)
        obs, *_ = env.step(1)
    onnx_nav.close()
    assert onnx_nav.semantic.frames == 14 and onnx_nav.geometric.valid.all()
    service, log = free_endpoint(), free_endpoint()
    pipe = Pipeline.from_yaml(pipelines.find("nav"), overrides(service, log, bundle))
    pipe.start()
    try:
        with Requester(service) as robot:
            replies = [read_reply(robot.request(request("a", obs["rgb"], e.instruction, seq=i),
                                                20.0)) for i in range(12)]
            other = read_reply(robot.request(request("b", obs["rgb"], "stop by the lamp",
                                                     seq=12), 20.0))
            small = read_reply(robot.request(request("b", obs["rgb"][:16], seq=13), 20.0))
            bare = read_reply(robot.request(request("c", obs["rgb"], seq=14), 20.0))
    finally:
        pipe.stop()
    assert [r["step"] for r in replies] == list(range(1, 13)) and other["step"] == 1
    assert all(r["action"] in ACTIONS for r in replies)
    assert len({r["memory_bytes"] for r in replies}) == 1          # fixed size
    assert "(32, 32, 3)" in small["error"] and "instruction" in bare["error"]
    stats = pipe.report()["nodes"]["agent"]
    assert stats["rejected"] == 2 and stats["episodes"] == 2


def test_evaluate_reports_every_variant_and_the_cost_curves(tmp_path):
    cfg = Config(**TINY, lengths=(10, 20), reencode_max=10, passes=1)
    result = evaluate(config=cfg)
    assert set(result["results"]) == set(VARIANTS)
    for key in ("sr", "spl", "ne", "os", "ndtw", "sr_long", "spl_long", "step_p99_ms",
                "memory_bytes_max"):
        assert key in result["results"]["janusvln"], key
    scaling = result["scaling"]["curves"]
    assert scaling["janusvln_ort"]["state_bytes"][0] == scaling["janusvln_ort"]["state_bytes"][-1]
    assert scaling["full_history"]["state_bytes"][-1] > scaling["full_history"]["state_bytes"][0]
    assert len(scaling["full_history"]["p99_ms"]) == 1            # timed up to reencode_max
    paths = figures(result, tmp_path / "eval.json")
    assert [p.name for p in paths] == ["eval.maps.png", "eval.scaling.png"]
    json.dumps(result)
