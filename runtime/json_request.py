"""Request/response services over ZeroMQ: one JSON string per chunk, both ways.

A service pipeline (`zmq_in` with `pattern: router` -> node -> `zmq_out` with `pattern:
reply`) gets each request as a 1 x 1 string chunk; images travel inside the JSON as
{"shape": [H, W, 3], "base64": raw uint8 RGB bytes}. `parse` validates a request against the
node's pydantic model and raises BadChunk naming the stream and the fields at fault, so the
pipeline quarantines it and the client gets a clear reply.
"""
from __future__ import annotations

import base64
import json
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from edgert.runtime.node import BadChunk
from edgert.streams import Chunk, StreamInfo, local_clock

Model = TypeVar("Model", bound=BaseModel)


class Image(BaseModel):
    shape: tuple[int, int, int]
    base64: str

    def pixels(self) -> np.ndarray:
        data = np.frombuffer(base64.b64decode(self.base64), np.uint8)
        if data.size != np.prod(self.shape) or self.shape[2] != 3:
            raise ValueError(f"image: {data.size} bytes do not make an RGB image of shape "
                             f"{list(self.shape)}")
        return data.reshape(self.shape)


def image_field(image: np.ndarray) -> dict:
    """An (H, W, 3) uint8 image as the JSON field `Image` reads."""
    image = np.ascontiguousarray(image, np.uint8)
    return {"shape": list(image.shape), "base64": base64.b64encode(image.tobytes()).decode()}


def json_chunk(body: dict, info: StreamInfo, seq: int = 0) -> Chunk:
    """A request chunk (what a client sends), stamped now."""
    return Chunk(np.array([[json.dumps(body)]], dtype=object), np.array([local_clock()]),
                 info, seq=seq)


def parse(chunk: Chunk, model: type[Model]) -> Model:
    """The request in `chunk`; BadChunk naming the stream and field when malformed."""
    where = f"stream {chunk.info.name!r}"
    if not chunk.is_string or chunk.data.shape != (1, 1):
        raise BadChunk("request", f"{where}: a request is one JSON string (1 x 1 string "
                       f"chunk), got {chunk.info.dtype} of shape {list(chunk.data.shape)}")
    try:
        return model.model_validate_json(chunk.data[0, 0])
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) or "body" for e in exc.errors())
        raise BadChunk("request", f"{where}: bad request field(s) {fields}: "
                       f"{exc.errors()[0]['msg']}") from None


def pixels(chunk: Chunk, image: Image) -> np.ndarray:
    """The image's pixels; BadChunk naming the stream when the bytes do not fit the shape."""
    try:
        return image.pixels()
    except ValueError as exc:
        raise BadChunk("request", f"stream {chunk.info.name!r}: {exc}") from None


def reply(chunk: Chunk, body: dict, info: StreamInfo) -> Chunk:
    """The reply chunk for request `chunk`: same seq (so the service routes it back) and
    the request's timestamp (so latency is counted from the client's send)."""
    return chunk.derive(np.array([[json.dumps(body)]], dtype=object), info=info)


def read(chunk: Chunk) -> dict:
    """A reply's body (what a client reads)."""
    return json.loads(chunk.data[0, 0])
