"""What a robot sends and gets back: one JSON string per chunk, both ways.

Request: {"question", "options", "budget" (cost units: 1 = the first pass), "deadline_ms",
"image": {"shape": [H, W, 3], "base64": raw uint8 RGB bytes}}. The reply is in README
("BOLT live").
"""
from __future__ import annotations

import base64
import json

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from edgert.runtime.node import BadChunk
from edgert.streams import Chunk, StreamInfo, local_clock

REQUESTS = StreamInfo(name="robot-requests", type="Request", channels=("json",),
                      dtype="string")
REPLIES = StreamInfo(name="robot-replies", type="Reply", channels=("json",), dtype="string")


class Image(BaseModel):
    shape: tuple[int, int, int]
    base64: str


class Request(BaseModel):
    question: str
    options: list[str] = Field(min_length=2, max_length=5)
    budget: float | None = Field(None, ge=0)
    deadline_ms: float | None = Field(None, gt=0)
    image: Image

    def pixels(self) -> np.ndarray:
        data = np.frombuffer(base64.b64decode(self.image.base64), np.uint8)
        if data.size != np.prod(self.image.shape) or self.image.shape[2] != 3:
            raise ValueError(f"image: {data.size} bytes do not make an RGB image of shape "
                             f"{list(self.image.shape)}")
        return data.reshape(self.image.shape)


def encode(image: np.ndarray, question: str, options: list[str], budget: float | None = None,
           deadline_ms: float | None = None, seq: int = 0) -> Chunk:
    """A request chunk (what a robot client sends)."""
    image = np.ascontiguousarray(image, np.uint8)
    body = {"question": question, "options": list(options), "budget": budget,
            "deadline_ms": deadline_ms,
            "image": {"shape": list(image.shape),
                      "base64": base64.b64encode(image.tobytes()).decode()}}
    return Chunk(np.array([[json.dumps(body)]], dtype=object), np.array([local_clock()]),
                 REQUESTS, seq=seq)


def decode(chunk: Chunk) -> tuple[Request, np.ndarray]:
    """The request and its pixels; BadChunk naming the stream and field when malformed."""
    where = f"stream {chunk.info.name!r}"
    if not chunk.is_string or chunk.data.shape != (1, 1):
        raise BadChunk("request", f"{where}: a request is one JSON string (1 x 1 string "
                       f"chunk), got {chunk.info.dtype} of shape {list(chunk.data.shape)}")
    try:
        request = Request.model_validate_json(chunk.data[0, 0])
        return request, request.pixels()
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) or "body" for e in exc.errors())
        raise BadChunk("request", f"{where}: bad request field(s) {fields}: "
                       f"{exc.errors()[0]['msg']}") from None
    except ValueError as exc:
        raise BadChunk("request", f"{where}: {exc}") from None


def reply(chunk: Chunk, body: dict) -> Chunk:
    """The reply chunk for request `chunk`: same seq (so the service routes it back) and
    the request's timestamp (so latency is counted from the robot's send)."""
    return chunk.derive(np.array([[json.dumps(body)]], dtype=object), info=REPLIES)


def read(chunk: Chunk) -> dict:
    """A reply's body (what a robot client reads)."""
    return json.loads(chunk.data[0, 0])
