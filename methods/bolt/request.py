"""What a robot sends and gets back: one JSON string per chunk, both ways (see
`edgert.runtime.json_request`).

Request: {"question", "options", "budget" (cost units: 1 = the first pass), "deadline_ms",
"image": {"shape": [H, W, 3], "base64": raw uint8 RGB bytes}}. The reply is in README
("BOLT live").
"""
from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from edgert.runtime import json_request
from edgert.runtime.json_request import Image, image_field, json_chunk, parse, pixels, read
from edgert.streams import Chunk, StreamInfo

REQUESTS = StreamInfo(name="robot-requests", type="Request", channels=("json",),
                      dtype="string")
REPLIES = StreamInfo(name="robot-replies", type="Reply", channels=("json",), dtype="string")
__all__ = ["Request", "encode", "decode", "reply", "read"]


class Request(BaseModel):
    question: str
    options: list[str] = Field(min_length=2, max_length=5)
    budget: float | None = Field(None, ge=0)
    deadline_ms: float | None = Field(None, gt=0)
    image: Image


def encode(image: np.ndarray, question: str, options: list[str], budget: float | None = None,
           deadline_ms: float | None = None, seq: int = 0) -> Chunk:
    """A request chunk (what a robot client sends)."""
    return json_chunk({"question": question, "options": list(options), "budget": budget,
                       "deadline_ms": deadline_ms, "image": image_field(image)}, REQUESTS, seq)


def decode(chunk: Chunk) -> tuple[Request, np.ndarray]:
    """The request and its pixels; BadChunk naming the stream and field when malformed."""
    request = parse(chunk, Request)
    return request, pixels(chunk, request.image)


def reply(chunk: Chunk, body: dict) -> Chunk:
    """The reply chunk for request `chunk`."""
    return json_request.reply(chunk, body, REPLIES)
