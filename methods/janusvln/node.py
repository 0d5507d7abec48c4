"""JanusVLN's live node: a navigation service that answers each camera frame with an action.

A request is one JSON string (see `edgert.runtime.json_request`): {"episode": ID,
"instruction": TEXT, "image": {"shape": [H, W, 3], "base64": ...}, "reset": false}. A new
episode ID (or `"reset": true`) clears both memories and starts from the instruction; every
other frame is one step of the bundle with the caches fed back. The reply: {"episode",
"step", "action", "action_id", "step_ms", "memory_bytes", "logits"}.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np
from pydantic import BaseModel, Field

from edgert.export.bundle import Bundle
from edgert.methods.janusvln.episodes import MAX_WORDS, WORDS, tokenize
from edgert.methods.janusvln.memory import KVCache
from edgert.methods.janusvln.model import NO_ACTION, Memory
from edgert.runtime.backends import open_backend
from edgert.runtime.json_request import Image, image_field, json_chunk, parse, pixels, reply
from edgert.runtime.node import BadChunk, Node, Params, UserPath
from edgert.streams import Chunk, StreamInfo

REQUESTS = StreamInfo(name="nav-frames", type="Request", channels=("json",), dtype="string")
REPLIES = StreamInfo(name="nav-actions", type="Reply", channels=("json",), dtype="string")


class Request(BaseModel):
    episode: str = Field(min_length=1)
    instruction: str = ""
    image: Image
    reset: bool = False


def request(episode: str, image: np.ndarray, instruction: str = "", reset: bool = False,
            seq: int = 0) -> Chunk:
    """A request chunk (what the robot sends each frame)."""
    return json_chunk({"episode": episode, "instruction": instruction,
                       "image": image_field(image), "reset": reset}, REQUESTS, seq)


class BundleNavigator:
    """The exported step graph run frame by frame with its two fixed-size caches: the same
    `reset(instruction)` / `act(rgb)` as the torch `navigate.Navigator`."""

    def __init__(self, bundle: Bundle, backend: str = "ort-cpu", threads: int | None = 1):
        config = bundle.manifest.preprocessing.get("janusvln")
        if not config:
            raise ValueError(f"bundle {bundle.path} is not a JanusVLN bundle (no "
                             "preprocessing.janusvln in its manifest); export one with "
                             "`edgert export janusvln --out DIR`")
        if list(config["words"]) != list(WORDS) or config["max_words"] != MAX_WORDS:
            raise ValueError(f"bundle {bundle.path} was exported with another vocabulary; "
                             "export it again with this edgert")
        self.size = config["size"]
        self.actions = config["actions"]
        memory = Memory(config["sinks"], config["window"])
        self.semantic = KVCache(*config["semantic"], memory)
        self.geometric = KVCache(*config["geometric"], memory)
        self.backend = open_backend(bundle, backend, threads=threads)

    def reset(self, instruction: str) -> None:
        self.words = tokenize(instruction)[None]
        self.previous = NO_ACTION
        self.semantic.reset()
        self.geometric.reset()

    def act(self, rgb: np.ndarray) -> int:
        self.logits = self.step(rgb)
        self.previous = int(self.logits.argmax())
        return self.previous

    def step(self, rgb: np.ndarray) -> np.ndarray:
        frame = np.ascontiguousarray(rgb.transpose(2, 0, 1)[None], np.float32) / 255
        out = self.backend.run({
            "frame": frame, "words": self.words,
            "previous": np.array([self.previous], np.int64),
            "semantic_kv": self.semantic.kv, "semantic_valid": self.semantic.valid,
            "geometric_kv": self.geometric.kv, "geometric_valid": self.geometric.valid})
        self.semantic.add(out["semantic_new"])
        self.geometric.add(out["geometric_new"])
        return out["logits"][0]

    @property
    def state_bytes(self) -> int:
        return self.semantic.nbytes + self.geometric.nbytes

    def close(self) -> None:
        self.backend.close()


class Navigate(Node):
    """Frame in, action out, with the step's latency and the memory's size in the reply."""

    class Params(Params):
        bundle: UserPath
        backend: str = "ort-cpu"
        threads: int | None = Field(1, ge=1, description="intra-op threads")

    def start(self) -> None:
        self.agent = BundleNavigator(Bundle.load(self.p.bundle), self.p.backend, self.p.threads)
        self.episode: str | None = None
        self.steps = 0
        self.episodes = 0
        self.answered = 0
        self.rejected = 0
        self.seconds: deque = deque(maxlen=10_000)

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        """A malformed request is answered with an error naming the field (a robot waiting
        for its action must not wait for a timeout) and counted as rejected."""
        chunk = inputs["in"]
        try:
            req, image = self.decode(chunk)
        except BadChunk as exc:
            self.rejected += 1
            return {"out": reply(chunk, {"error": str(exc)}, REPLIES)}
        if req.reset or req.episode != self.episode:
            self.agent.reset(req.instruction)
            self.episode, self.steps = req.episode, 0
            self.episodes += 1
        enter = time.perf_counter()
        action = self.agent.act(image)
        seconds = time.perf_counter() - enter
        self.seconds.append(seconds)
        self.steps += 1
        self.answered += 1
        return {"out": reply(chunk, {
            "episode": req.episode, "step": self.steps, "action": self.agent.actions[action],
            "action_id": action, "step_ms": seconds * 1e3,
            "memory_bytes": self.agent.state_bytes,
            "logits": [round(float(v), 4) for v in self.agent.logits]}, REPLIES)}

    def decode(self, chunk: Chunk) -> tuple[Request, np.ndarray]:
        """The request and its frame, checked against the bundle and the episode."""
        req = parse(chunk, Request)
        image = pixels(chunk, req.image)
        size = self.agent.size
        if image.shape != (size, size, 3):
            raise BadChunk("request", f"node {self.name!r}: stream {chunk.info.name!r} sent a "
                           f"{list(image.shape)} image; the bundle takes ({size}, {size}, 3) "
                           "RGB frames: resize them before sending")
        if (req.reset or req.episode != self.episode) and not req.instruction.strip():
            raise BadChunk("request", f"node {self.name!r}: episode {req.episode!r} starts "
                           "without an instruction: send it in the first frame's "
                           "'instruction' field")
        return req, image

    def stop(self) -> None:
        self.agent.close()

    def stats(self) -> dict:
        """Steps, episodes, the memory's bytes and the step time (`stage_ms`)."""
        out = {"steps": self.answered, "episodes": self.episodes, "rejected": self.rejected,
               "memory_bytes": self.agent.state_bytes}
        if self.seconds:
            v = np.array(self.seconds)
            out["stage_ms"] = {"step": {**{f"p{q}_ms": float(np.percentile(v, q)) * 1e3
                                           for q in (50, 90, 99)}, "count": len(v)}}
        return out
