"""Training: the geometric encoder first (depth and relative pose, then frozen), then each
agent variant by teacher forcing on expert paths and DAgger rounds.

Teacher forcing runs whole episodes at once (the memory's rule as an attention mask, the
same keys/values the live cache holds). A DAgger round lets the agent drive (the expert's
action taken with probability beta = 0.5 ** round), labels every state it reached with the
expert's action, and adds those episodes to the training set.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from pydantic import BaseModel, Field
from rich.progress import Progress

from edgert.runtime.plugin import Data, own_out
from edgert.methods.cache import CHECKPOINT, cache_folder
from edgert.methods.janusvln.data import read
from edgert.methods.janusvln.baselines import make_agent
from edgert.methods.janusvln.env import NavEnv
from edgert.methods.janusvln.episodes import (INDEX, MAX_STEPS, WORDS, Episode, episodes,
                                              split, tokenize)
from edgert.methods.janusvln import simulate
from edgert.methods.janusvln.model import (NO_ACTION, Agent, FrameEncoder, Geometry, Memory,
                                          pool)
from edgert.methods.janusvln.simulate import KINDS, TINTS
from edgert.methods.janusvln.navigate import Navigator
from edgert.export.checkpoint import load_checkpoint
from edgert.runtime.progress import progress_bar


class Config(BaseModel):
    houses: int = Field(60, description="training houses")
    unseen: int = Field(16, description="val-unseen houses (evaluation only)")
    episodes_per_house: int = 10
    eval_per_house: int = 6
    width: int = 64
    layers: int = 2
    sinks: int = 2
    window: int = 8
    lam: float = Field(0.2, description="weight of the merged geometric tokens")
    semantic_steps: int = 1000
    geometry_steps: int = 400
    policy_steps: int = 1500
    dagger_rounds: int = 2
    dagger_episodes: int = 60
    dagger_steps: int = 250
    batch: int = 8
    max_frames: int = Field(64, description="frames of an episode per training sequence")
    policy_frames: int = Field(16, description="frames per sequence the policy loss reads")
    lr: float = 1e-3
    inflection_weight: float = Field(3.2, description="loss weight where the expert's action "
                                     "changes (VLN-CE's inflection weighting)")
    seed: int = 0

    @classmethod
    def quick(cls) -> "Config":
        """`edgert train janusvln --quick` (the shipped model): one agent, minutes."""
        return cls(houses=30, unseen=8, episodes_per_house=10, eval_per_house=5,
                   semantic_steps=400, geometry_steps=100, policy_steps=800, dagger_rounds=1,
                   dagger_episodes=30, dagger_steps=150)


@dataclass
class Pretrained:
    """What every variant starts from: the semantic encoder and word embeddings (trained
    on), the geometric encoder (frozen)."""

    semantic: FrameEncoder
    words: nn.Embedding
    geometry: Geometry


@dataclass
class Trajectory:
    """One episode as the agent saw it: frames (F, H, W, 3) uint8, depth (F, H, W) m,
    poses (F, 3), the expert's action at each frame, the action taken before it."""

    frames: np.ndarray
    depth: np.ndarray
    poses: np.ndarray
    labels: np.ndarray
    previous: np.ndarray
    words: np.ndarray
    seen: np.ndarray                                 # (F, W) word id each column shows
    geometric: dict = field(default_factory=dict)   # memory rule -> (F, 64, D) float16


def drive(env: NavEnv, episode: Episode, choose, limit: int = MAX_STEPS) -> Trajectory:
    """Run `choose(obs, expert_action) -> action` from the episode's start until STOP or
    `limit` steps, recording every frame with the expert's label."""
    obs, _ = env.reset(options={"episode": episode})
    rows, previous = [], NO_ACTION
    for _ in range(limit):
        label = env.expert()
        action = choose(obs, label)
        names = simulate.seen(env.map, *env.pose)
        rows.append((obs["rgb"], obs["depth"], obs["pose"], label, previous,
                     np.array([INDEX[n] for n in names])))
        obs, _, done, truncated, _ = env.step(action)
        previous = action
        if done or truncated:
            break
    frames, depth, poses, labels, prev, names = map(np.stack, zip(*rows))
    return Trajectory(frames, depth, poses, labels.astype(np.int64), prev.astype(np.int64),
                      tokenize(episode.instruction), names)


def expert_trajectories(env: NavEnv, eps: list[Episode]) -> list[Trajectory]:
    return [drive(env, e, lambda obs, label: label) for e in eps]


def frames_tensor(batch: list[Trajectory], frames: int) -> torch.Tensor:
    """(B, F, 3, H, W) in [0, 1], zero-padded to `frames`."""
    out = np.zeros((len(batch), frames, *batch[0].frames.shape[1:]), np.uint8)
    for i, t in enumerate(batch):
        out[i, :min(len(t.frames), frames)] = t.frames[:frames]
    return torch.from_numpy(out).permute(0, 1, 4, 2, 3).float() / 255


def padded(batch: list[Trajectory], name: str, frames: int, fill: int) -> torch.Tensor:
    out = np.full((len(batch), frames), fill, np.int64)
    for i, t in enumerate(batch):
        values = getattr(t, name)[:frames]
        out[i, :len(values)] = values
    return torch.from_numpy(out)


def pretrain_semantic(data: list[Trajectory], cfg: Config, advance
                      ) -> tuple[FrameEncoder, nn.Embedding]:
    """The visual-semantic encoder and the word embeddings, aligned: each token scores the
    words (landmark kinds, room tints) its image column shows as `token . embedding`
    (binary cross-entropy), frame by frame, the stand-in for a vision-language encoder."""
    torch.manual_seed(cfg.seed)
    encoder = FrameEncoder(8, cfg.width, cfg.layers)
    words = nn.Embedding(len(WORDS), cfg.width, padding_idx=0)
    scale = nn.Parameter(torch.tensor(4.0))
    params = [*encoder.parameters(), *words.parameters(), scale]
    opt = torch.optim.AdamW(params, lr=cfg.lr)
    named = torch.tensor([INDEX[w] for w in (*KINDS, *TINTS)])
    frames = np.concatenate([t.frames for t in data])
    seen = np.concatenate([t.seen for t in data])                        # (N, W)
    rng = np.random.default_rng(cfg.seed)
    alone = torch.ones(1, 1, dtype=torch.bool)
    side = int(encoder.tokens ** 0.5)
    for _ in range(cfg.semantic_steps):
        pick = rng.choice(len(frames), 64)
        x = torch.from_numpy(frames[pick]).permute(0, 3, 1, 2).float()[:, None] / 255
        tokens = encoder.sequence(x, alone)[:, 0]                        # (64, 16, D)
        keys = F.normalize(words(named), dim=-1)
        logits = scale * F.normalize(tokens, dim=-1) @ keys.T            # (64, 16, V')
        columns = torch.from_numpy(seen[pick]).unflatten(1, (side, -1))  # (64, 4, W / 4)
        target = (columns[..., None] == named).any(2).float()            # (64, 4, V')
        target = target[:, None].expand(-1, side, -1, -1).flatten(1, 2)  # (64, 16, V')
        loss = F.binary_cross_entropy_with_logits(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        advance()
    return encoder, words


def pretrain_geometry(data: list[Trajectory], cfg: Config, advance) -> Geometry:
    """Depth (L1 on log depth) and pose relative to the first frame (MSE), sinks + window."""
    torch.manual_seed(cfg.seed)
    model = Geometry(cfg.width, cfg.layers)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(cfg.seed)
    rule = Memory(cfg.sinks, cfg.window)
    frames = 32
    for _ in range(cfg.geometry_steps):
        batch = [data[i] for i in rng.choice(len(data), 4)]
        n = min(frames, max(len(t.frames) for t in batch))
        tokens = model.encoder.sequence(frames_tensor(batch, n), rule.allowed(n))
        depth, pose = model.heads(tokens)
        true_depth, true_pose, mask = geometry_targets(batch, n)
        loss = ((depth - true_depth).abs().mean((-1, -2)) * mask).sum() / mask.sum() + \
            (((pose - true_pose) ** 2).mean(-1) * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        advance()
    return model.eval().requires_grad_(False)


def geometry_targets(batch: list[Trajectory], n: int
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log depth (B, n, H, W), pose relative to the first frame (B, n, 4), and the mask of
    real frames (B, n)."""
    depth = np.zeros((len(batch), n, *batch[0].depth.shape[1:]), np.float32)
    pose = np.zeros((len(batch), n, 4), np.float32)
    mask = np.zeros((len(batch), n), np.float32)
    for i, t in enumerate(batch):
        k = min(n, len(t.frames))
        depth[i, :k] = np.log(t.depth[:k])
        x0, y0, h0 = t.poses[0]
        dx, dy = t.poses[:k, 0] - x0, t.poses[:k, 1] - y0
        c, s = np.cos(-h0), np.sin(-h0)
        dh = t.poses[:k, 2] - h0
        pose[i, :k] = np.stack([(c * dx - s * dy) / 5, (s * dx + c * dy) / 5, np.cos(dh),
                                np.sin(dh)], 1)
        mask[i, :k] = 1
    return torch.from_numpy(depth), torch.from_numpy(pose), torch.from_numpy(mask)


def geometric_tokens(agent: Agent, t: Trajectory, frames: int) -> torch.Tensor | None:
    """The frozen geometric encoder's tokens of a trajectory under the agent's memory rule,
    computed once per rule: (F, 64, D)."""
    if agent.geometry is None:
        return None
    key = (agent.memory, agent.explicit)
    if key not in t.geometric:
        x = frames_tensor([t], min(len(t.frames), frames))
        allowed = sequence_rule(agent, x.shape[1])
        t.geometric[key] = agent.geometric_sequence(x, allowed)[0].half()
    return t.geometric[key]


def sequence_rule(agent: Agent, frames: int) -> torch.Tensor:
    return torch.eye(frames, dtype=torch.bool) if agent.explicit else agent.memory.allowed(frames)


def policy_loss(agent: Agent, batch: list[Trajectory], cfg: Config, rng: np.random.Generator
                ) -> torch.Tensor:
    """Cross-entropy of the expert's actions at `policy_frames` frames of the batch's
    episodes (the encoders run over every frame), frames where the expert's action changes
    weighted up (inflection weighting: STOP and the turns are what an agent must learn)."""
    n = min(cfg.max_frames, max(len(t.frames) for t in batch))
    frames = frames_tensor(batch, n)
    allowed = sequence_rule(agent, n)
    semantic = agent.semantic.sequence(frames, allowed)                  # (B, n, 16, D)
    geometric = None
    if agent.geometry is not None:
        geometric = torch.zeros(*semantic.shape[:2], agent.geometry.encoder.tokens,
                                semantic.shape[-1])
        for i, t in enumerate(batch):
            g = geometric_tokens(agent, t, cfg.max_frames)[:n].float()
            geometric[i, :len(g)] = g
    fused = agent.fused(semantic, geometric)                             # (B, n, 16, D)
    at = torch.from_numpy(np.sort(rng.choice(n, min(n, cfg.policy_frames), replace=False)))
    b, k = len(batch), len(at)
    words = torch.from_numpy(np.stack([t.words for t in batch])).repeat_interleave(k, 0)
    history = seen = None
    if agent.explicit:
        stored = pool(fused).flatten(1, 2)                               # (B, n * 4, D)
        history = stored.repeat_interleave(k, 0)                         # (B * k, n * 4, D)
        frame_of = torch.arange(n).repeat_interleave(4)
        seen = (frame_of[None] < at[:, None]).repeat(b, 1)               # (B * k, n * 4)
    previous = padded(batch, "previous", n, 0)[:, at].flatten()
    logits = agent.policy(words, fused[:, at].flatten(0, 1), previous, history, seen)
    labels = padded(batch, "labels", n, -100)
    changed = torch.ones_like(labels, dtype=torch.bool)
    changed[:, 1:] = labels[:, 1:] != labels[:, :-1]
    weight = torch.where(changed, cfg.inflection_weight, 1.0)[:, at].flatten()
    labels = labels[:, at].flatten()
    loss = F.cross_entropy(logits, labels.clamp_min(0), reduction="none")
    keep = (labels >= 0).float() * weight
    return (loss * keep).sum() / keep.sum().clamp_min(1.0)


def fit(agent: Agent, data: list[Trajectory], steps: int, cfg: Config,
        rng: np.random.Generator, advance) -> None:
    params = [p for p in agent.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    agent.train()
    for _ in range(steps):
        loss = policy_loss(agent, [data[i] for i in rng.choice(len(data), cfg.batch)], cfg, rng)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        schedule.step()
        advance()
    agent.eval()


def dagger(agent: Agent, env: NavEnv, eps: list[Episode], beta: float,
           rng: np.random.Generator) -> list[Trajectory]:
    """The agent drives (the expert's action with probability `beta`); every state reached
    is labelled with the expert's action."""
    navigator = Navigator(agent)
    out = []
    for e in eps:
        navigator.reset(e.instruction)

        def choose(obs, label):
            own = navigator.act(obs["rgb"])
            navigator.previous = label if rng.random() < beta else own
            return navigator.previous

        out.append(drive(env, e, choose, min(MAX_STEPS, 2 * len(e.actions) + 20)))
    return out


def train_variant(name: str, pretrained: Pretrained, data: list[Trajectory], cfg: Config,
                  env: NavEnv, advance, say) -> Agent:
    """Teacher forcing, then `dagger_rounds` rounds of DAgger, for variant `name`, from the
    pretrained encoders."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed + 1)
    agent = make_agent(name, pretrained.geometry, cfg.sinks, cfg.window, cfg.lam, cfg.width,
                       cfg.layers)
    agent.semantic.load_state_dict(pretrained.semantic.state_dict())
    agent.policy.words.load_state_dict(pretrained.words.state_dict())
    say(f"{name}: teacher forcing on {len(data)} expert episodes")
    fit(agent, data, cfg.policy_steps, cfg, rng, advance)
    data = list(data)
    train_houses, _ = split(cfg.houses, cfg.unseen)
    for r in range(1, cfg.dagger_rounds + 1):
        say(f"{name}: DAgger round {r}, the agent drives {cfg.dagger_episodes} episodes")
        eps = episodes(train_houses, 1, cfg.seed + 1000 * r)
        eps = [eps[i] for i in rng.choice(len(eps), cfg.dagger_episodes)]
        data += dagger(agent, env, eps, 0.5 ** r, rng)
        advance()
        fit(agent, data, cfg.dagger_steps, cfg, rng, advance)
    return agent


def stage_count(cfg: Config, variants: int) -> int:
    per_variant = cfg.policy_steps + cfg.dagger_rounds * (1 + cfg.dagger_steps)
    return 1 + cfg.semantic_steps + cfg.geometry_steps + variants * per_variant


def train_all(cfg: Config, variants: tuple[str, ...], progress: Progress | None = None,
              data: Data | None = None) -> tuple[Geometry, dict[str, Agent]]:
    """The pretrained encoders and every variant in `variants`, with a progress bar."""
    task = progress.add_task("JanusVLN", total=stage_count(cfg, len(variants))) \
        if progress else None

    def advance():
        if progress:
            progress.advance(task)

    def say(what: str):
        if progress:
            progress.update(task, description=f"JanusVLN: {what}")

    train_houses, _ = split(cfg.houses, cfg.unseen)
    env = NavEnv(train_houses)
    say("rendering the expert's episodes")
    eps = training_episodes(cfg, data)
    trajectories = expert_trajectories(env, eps)
    advance()
    say("pretraining the semantic encoder (what each column shows)")
    semantic, words = pretrain_semantic(trajectories, cfg, advance)
    say("pretraining the geometric encoder (depth, pose)")
    pretrained = Pretrained(semantic, words, pretrain_geometry(trajectories, cfg, advance))
    agents = {v: train_variant(v, pretrained, trajectories, cfg, env, advance, say)
              for v in variants}
    return pretrained.geometry, agents


def training_episodes(cfg: Config, data: Data | None) -> list[Episode]:
    train_houses, _ = split(cfg.houses, cfg.unseen)
    return read(data) if data else episodes(train_houses, cfg.episodes_per_house, cfg.seed)


def save(folder: Path, cfg: Config, geometry: Geometry, agents: dict[str, Agent],
         meta: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CHECKPOINT
    torch.save({"config": cfg.model_dump(), "geometry": geometry.state_dict(),
                "agents": {k: a.state_dict() for k, a in agents.items()}, "meta": meta}, path)
    return path


def load(path: Path) -> tuple[Config, dict[str, Agent], dict]:
    """The config, the trained agents by variant, and the run's facts."""
    state = load_checkpoint(path, "a JanusVLN checkpoint",
                            "make one with `edgert train janusvln --out DIR`")
    cfg = Config(**state["config"])
    geometry = Geometry(cfg.width, cfg.layers)
    geometry.load_state_dict(state["geometry"])
    geometry.eval().requires_grad_(False)
    agents = {}
    for name, weights in state["agents"].items():
        agents[name] = make_agent(name, geometry, cfg.sinks, cfg.window, cfg.lam, cfg.width,
                                  cfg.layers)
        agents[name].load_state_dict(weights)
        agents[name].eval()
    return cfg, agents, state["meta"]


def train(out: Path | None = None, quick: bool = False, seed: int = 0,
          data: Data | None = None) -> Path:
    """`edgert train janusvln`: the JanusVLN agent -> `out/checkpoint.pt`; `data`: VLN-CE
    R2R episode files to learn from instead of the simulated ones."""
    out = own_out(out) if data else Path(out or cache_folder("janusvln"))
    cfg = (Config.quick() if quick else Config()).model_copy(update={"seed": seed})
    started = time.time()
    with progress_bar() as progress:
        geometry, agents = train_all(cfg, ("janusvln",), progress, data)
    return save(out, cfg, geometry, agents, {"seconds": time.time() - started,
                                             "data": [str(p) for p in data.paths] if data
                                             else "simulated"})
