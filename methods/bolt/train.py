"""Training: pretrain the teacher and the student on the broad mix (answer-word likelihood, as a
VLM is pretrained), cache the teacher's option distributions on the target mix at tau_kd = 2,
then fine-tune the student three ways (CE only, token-level KD, option-level decision
distillation) and fit each model's temperature on validation (NLL).

On a user's Robo2VLM rows (`data`), the rows are split by image into train, validation and
test; both models read the words of the training questions (`Text.learn`), and pretraining
uses the training rows, as there is no broad mix of the user's robot.

Option-level Decision Distillation (ODD): L = KL(p_teacher || p_student) tau^2
+ 0.1 CE(label, p_student), both over the option scores, never over tokens.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from rich.progress import Progress
from scipy.optimize import minimize_scalar

from edgert.runtime.plugin import Data, DataError, own_out
from edgert.methods.bolt import policy
from edgert.methods.bolt.data import (BROAD, TARGET, UNSEEN, QASet, from_rows, generate,
                                      load_robo2vlm, split, views)
from edgert.methods.bolt.model import PAD, Scorer, build
from edgert.methods.bolt.questions import SIMULATED, Text
from edgert.methods.cache import CHECKPOINT
from edgert.methods.threads import one_thread
from edgert.export.checkpoint import load_checkpoint
from edgert.runtime.progress import progress_bar

TAU_KD = 2.0
CE_WEIGHT = 0.1
STUDENTS = ("zero_shot", "ce_only", "token_kd", "odd")


@dataclass
class Config:
    episodes: int = 150
    frames: int = 8
    per_frame: int = 4
    broad_episodes: int = 300
    pretrain_steps: int = 2500
    finetune_steps: int = 800
    timed_requests: int = 300
    seed: int = 0
    data: tuple[str, ...] = ()  # Robo2VLM-1 parquet files: train and test on them instead

    @classmethod
    def quick(cls) -> "Config":
        return cls(episodes=60, broad_episodes=100, pretrain_steps=600, finetune_steps=200,
                   timed_requests=60)


MIN_ROWS = 40  # of a user's data: each of train, validation and test needs some


def target_sets(cfg: Config) -> dict[str, QASet]:
    """The robot's questions (or the user's rows): train (fine-tuning), val (temperatures,
    router) and test, disjoint by image."""
    if cfg.data:
        rows = [r for path in cfg.data for r in load_robo2vlm(path)]
        if len(rows) < MIN_ROWS:
            raise DataError(f"{', '.join(cfg.data)}: {len(rows)} rows; BOLT needs at least "
                            f"{MIN_ROWS} to train, calibrate and test")
        qa = from_rows(rows)
    else:
        qa = generate(cfg.episodes, cfg.frames, cfg.per_frame, TARGET, 0.15, cfg.seed)
    return dict(zip(("train", "val", "test"), split(qa, (0.5, 0.25, 0.25), cfg.seed)))


def reads(cfg: Config, train: QASet) -> Text:
    """The words the models read: the simulator's, or those of the user's training rows."""
    if not cfg.data:
        return SIMULATED
    return Text.learn([q.text for q in train.questions],
                      [o for q in train.questions for o in q.options])


def broad_set(cfg: Config) -> QASet:
    return generate(cfg.broad_episodes, cfg.frames, cfg.per_frame, BROAD, 0.02, cfg.seed + 7)


def probs(scores: torch.Tensor, mask: torch.Tensor, tau: float = 1.0) -> torch.Tensor:
    """Option distribution: softmax of scores / tau over the valid options only."""
    return torch.softmax((scores / tau).masked_fill(~mask, -1e9), -1)


def _t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x))


def scores(model: Scorer, batch: dict[str, np.ndarray], size: int = 256) -> np.ndarray:
    """(N, K) option scores of a whole set, in batches, without gradients."""
    model.eval()
    with torch.no_grad():
        out = [model(_t(batch["image"][i:i + size]), _t(batch["question"][i:i + size]),
                     _t(batch["options"][i:i + size]))[0].numpy()
               for i in range(0, len(batch["answer"]), size)]
    return np.concatenate(out)


def _gold_tokens(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    return batch["options"][torch.arange(len(batch["answer"])), batch["answer"]]


def _word_logits(model: Scorer, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B, T, V) next-word logits along the right answer's words."""
    ctx, _ = model.context(batch["image"], batch["question"])
    return model.token_logits(ctx, _gold_tokens(batch).unsqueeze(1))[:, 0]


def lm_loss(model: Scorer, batch: dict[str, torch.Tensor], _: dict) -> torch.Tensor:
    """Pretraining: cross-entropy of the right answer's words, plus parsing the scene's
    attributes from the image (as a VLM's vision tower is pretrained before it answers)."""
    gold = _gold_tokens(batch)
    words = F.cross_entropy(_word_logits(model, batch).transpose(1, 2), gold, ignore_index=PAD)
    seen = batch["attributes"][:, 0] != UNSEEN  # a user's photos have no attribute labels
    if not seen.any():
        return words
    parsed = model.attribute_logits(batch["image"][seen])
    return words + sum(F.cross_entropy(logits, batch["attributes"][seen, i])
                       for i, logits in enumerate(parsed)) / len(parsed)


def ce_loss(model: Scorer, batch: dict[str, torch.Tensor], _: dict) -> torch.Tensor:
    s, _ = model(batch["image"], batch["question"], batch["options"])
    return F.nll_loss(torch.log(probs(s, batch["mask"]) + 1e-9), batch["answer"])


def odd_loss(model: Scorer, batch: dict[str, torch.Tensor], teacher: dict) -> torch.Tensor:
    s, _ = model(batch["image"], batch["question"], batch["options"])
    p_t = teacher["options"]
    log_s = torch.log(probs(s, batch["mask"], TAU_KD) + 1e-9)
    kl = (p_t * (torch.log(p_t + 1e-9) - log_s)).sum(1).mean() * TAU_KD ** 2
    return kl + CE_WEIGHT * F.nll_loss(torch.log(probs(s, batch["mask"]) + 1e-9),
                                       batch["answer"])


def token_kd_loss(model: Scorer, batch: dict[str, torch.Tensor], teacher: dict) -> torch.Tensor:
    """Token-level KD: per-word KL to the teacher along the right answer, + the same CE."""
    log_s = F.log_softmax(_word_logits(model, batch) / TAU_KD, -1)
    p_t = teacher["words"]
    real = (_gold_tokens(batch) != PAD).float()
    kl = ((p_t * (torch.log(p_t + 1e-9) - log_s)).sum(2) * real).sum(1).mean() * TAU_KD ** 2
    return kl + CE_WEIGHT * ce_loss(model, batch, teacher)


def fit(model: Scorer, data: dict[str, dict[str, np.ndarray]], loss, steps: int, seed: int,
        teacher: dict[str, dict[str, np.ndarray]] | None = None, lr: float = 3e-3,
        batch: int = 64, progress: Progress | None = None, what: str = "") -> Scorer:
    """`steps` Adam steps (one-cycle schedule) on random batches; a batch is one view, the
    base or the high-resolution one, drawn at random, so the student serves both."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    n = len(data["base"]["answer"])
    task = progress.add_task(what, total=steps) if progress else None
    model.train()
    for _ in range(steps):
        view = "base" if rng.random() < 0.5 else "high"
        idx = rng.integers(0, n, batch)
        b = {k: _t(v[idx]) for k, v in data[view].items()}
        t = {k: _t(v[idx]) for k, v in teacher[view].items()} if teacher else {}
        opt.zero_grad()
        loss(model, b, t).backward()
        opt.step()
        sched.step()
        if progress:
            progress.advance(task)
    model.eval()
    return model


def teacher_targets(teacher: Scorer, data: dict[str, dict[str, np.ndarray]]
                    ) -> dict[str, dict[str, np.ndarray]]:
    """The teacher's cached decisions at tau_kd, per view: option distributions (ODD) and
    next-word distributions along the right answer (token-level KD). It always looks at the
    high-resolution view: its decisions are what it would say with the best image."""
    high = data["high"]
    s = torch.from_numpy(scores(teacher, high))
    options = probs(s / TAU_KD, torch.from_numpy(high["mask"])).numpy()
    with torch.no_grad():
        words = torch.cat([torch.softmax(_word_logits(teacher, {k: _t(v[i:i + 256]) for k, v in
                                                                high.items()}) / TAU_KD, -1)
                           for i in range(0, len(high["answer"]), 256)]).numpy()
    cached = {"options": options.astype(np.float32), "words": words.astype(np.float32)}
    return {"base": cached, "high": cached}


def fit_temperature(s: np.ndarray, mask: np.ndarray, answer: np.ndarray) -> float:
    """The temperature that minimises validation NLL (post-hoc temperature scaling)."""
    st, mt, at = torch.from_numpy(s), torch.from_numpy(mask), torch.from_numpy(answer)

    def nll(t: float) -> float:
        p = probs(st, mt, t)
        return float(-torch.log(p[torch.arange(len(at)), at] + 1e-12).mean())

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


@dataclass
class Trained:
    """Every model `evaluate` compares, with the temperatures fitted on validation."""

    config: Config
    models: dict[str, Scorer]
    temperature: dict[str, float] = field(default_factory=dict)
    text: Text = SIMULATED

    def save(self, path: Path) -> None:
        torch.save({"config": self.config.__dict__, "temperature": self.temperature,
                    "models": {k: m.state_dict() for k, m in self.models.items()},
                    "sizes": {k: m.d for k, m in self.models.items()},
                    "text": self.text.to_dict()}, path)

    @classmethod
    def load(cls, path: Path) -> "Trained":
        state = load_checkpoint(path, "a BOLT checkpoint",
                                "make one with `edgert train bolt --out DIR`")
        text = Text.from_dict(state["text"])
        models = {}
        for name, weights in state["models"].items():
            models[name] = Scorer(state["sizes"][name], len(text.vocabulary), text.max_question)
            models[name].load_state_dict(weights)
            models[name].eval()
        config = Config(**state["config"] | {"data": tuple(state["config"].get("data", ()))})
        return cls(config, models, state["temperature"], text)


def train_all(cfg: Config) -> Trained:
    sets = target_sets(cfg)
    text = reads(cfg, sets["train"])
    target = views(sets["train"], text)
    broad = target if cfg.data else views(broad_set(cfg))
    val = views(sets["val"], text)
    mix = "your training rows" if cfg.data else "broad mix"
    with progress_bar() as bar:
        teacher = fit(build("teacher", text), broad, lm_loss, cfg.pretrain_steps, cfg.seed,
                      progress=bar, what=f"teacher: pretrain ({mix})")
        zero_shot = fit(build("student", text), broad, lm_loss, cfg.pretrain_steps,
                        cfg.seed + 1, progress=bar, what=f"student: pretrain ({mix})")
        cached = teacher_targets(teacher, target)
        models = {"teacher": teacher, "zero_shot": zero_shot}
        for name, loss in (("ce_only", ce_loss), ("token_kd", token_kd_loss),
                           ("odd", odd_loss)):
            models[name] = fit(copy.deepcopy(zero_shot), target, loss, cfg.finetune_steps,
                               cfg.seed + 2, teacher=cached, progress=bar,
                               what=f"student: {name}")
    temps = {name: fit_temperature(scores(m, val["base"]), val["base"]["mask"],
                                   val["base"]["answer"])
             for name, m in models.items()}
    return Trained(cfg, models, temps, text)


def train(out: Path | str | None, quick: bool = False, config: Config | None = None,
          data: Data | None = None) -> Path:
    """`edgert train bolt [--data FILE.parquet...]`: every model, saved as one checkpoint in
    `out`, and the ODD student's router fitted on validation beside it."""
    cfg = config or (Config.quick() if quick else Config())
    if data is not None:
        cfg = replace(cfg, data=tuple(str(p) for p in data.paths))
    out = own_out(out) if data is not None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with one_thread():
        trained = train_all(cfg)
        sets = target_sets(cfg)
        t = trained.temperature["odd"]
        router, mem, mix, _ = policy.fit(policy.torch_score(trained.models["odd"],
                                                            trained.text),
                                         sets["train"], sets["val"], t)
    policy.save(out, router, mem, t, mix)
    trained.save(out / CHECKPOINT)
    return out / CHECKPOINT
