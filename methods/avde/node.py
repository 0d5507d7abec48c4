"""AVDE's live nodes, after the `infer` node that runs the encoder bundle on each trial.

`Retrieve` answers a trial's embedding with the gallery's nearest images (names and cosine
scores). `Generate` runs the scale loop: one ONNX run of the step graph per scale, the key/
value cache carried between them, tokens sampled here; it emits the image as a PNG (base64 in
a string sample), each scale's time in the chunk's trace (`generate:scale-S`), so a client
sees what every scale cost.
"""
from __future__ import annotations

import base64
from collections import deque
from dataclasses import replace

import cv2
import numpy as np
from pydantic import Field

from edgert.export.bundle import Bundle
from edgert.methods.avde.generate import Generated, Generator, Sampling
from edgert.runtime.backends import open_backend
from edgert.runtime.node import BadChunk, Node, Params, UserPath
from edgert.streams import Chunk, StreamInfo
from edgert.streams.clock import local_clock


def _config(bundle: Bundle, node: str) -> dict:
    config = bundle.manifest.preprocessing.get("avde")
    if not config:
        raise ValueError(f"node {node!r}: bundle {bundle.path} is not an AVDE bundle (no "
                         "preprocessing.avde in its manifest); export one with "
                         "`edgert export avde --out DIR`")
    return config


def _embedding(chunk: Chunk, dim: int, node: str) -> np.ndarray:
    data = np.asarray(chunk.data, np.float32)
    if data.ndim != 2 or data.shape[1] != dim:
        raise BadChunk("shape", f"node {node!r}: stream {chunk.info.name!r} gives shape "
                       f"{list(data.shape)}; expected (trials, {dim}) embeddings from the "
                       "AVDE encoder bundle")
    return data


class Retrieve(Node):
    """`ids`: the top-k gallery names per trial (strings); `scores`: their cosine scores."""

    outputs = ("ids", "scores")

    class Params(Params):
        bundle: UserPath
        top_k: int = Field(5, ge=1, description="gallery images returned per trial")

    def start(self) -> None:
        bundle = Bundle.load(self.p.bundle)
        with np.load(bundle.file(_config(bundle, self.name)["gallery"])) as gallery:
            self.embeddings = gallery["embeddings"]
            self.names = gallery["names"].astype(str)
        self.k = min(self.p.top_k, len(self.names))
        self.trials = 0

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        chunk = inputs["in"]
        scores = _embedding(chunk, self.embeddings.shape[1], self.name) @ self.embeddings.T
        top = np.argsort(-scores, axis=1)[:, :self.k]
        self.trials += len(top)
        ranks = tuple(f"rank{i + 1}" for i in range(self.k))
        info = StreamInfo(name=f"{chunk.info.name}-{self.name}", type="Retrieval",
                          channels=ranks, rate=0.0, dtype="string",
                          source_id=chunk.info.source_id)
        return {"ids": chunk.derive(self.names[top].astype(object), info=info),
                "scores": chunk.derive(np.take_along_axis(scores, top, 1).astype(np.float32),
                                       info=replace(info, name=f"{info.name}-scores",
                                                    dtype="float32"))}

    def stats(self) -> dict:
        return {"trials": self.trials, "gallery": len(self.names)}


class Generate(Node):
    """The image drawn coarse to fine from each trial's embedding: one string sample, the PNG
    in base64 (stream type `image/png`; a sample's shape stays the same whatever the PNG's
    size); `strip` puts every scale's image left to right."""

    class Params(Params):
        bundle: UserPath
        backend: str = "ort-cpu"
        threads: int | None = Field(1, ge=1, description="intra-op threads")
        cfg: float = Field(2.0, ge=0, description="classifier-free guidance at the last scale, "
                           "ramped from 0 at the first")
        top_k: int = Field(40, ge=1)
        top_p: float = Field(0.9, gt=0, le=1)
        seed: int | None = Field(0, description="sampling seed; none: a fresh one")
        strip: bool = Field(True, description="every scale's image, left to right; else the "
                            "final image only")
        scale_px: int = Field(2, ge=1, description="pixel repeat of the PNG")

    def start(self) -> None:
        bundle = Bundle.load(self.p.bundle)
        config = _config(bundle, self.name)
        graphs = {g: open_backend(bundle.file(path), self.p.backend, threads=self.p.threads)
                  for g, path in config["generator"].items()}
        self.backends = list(graphs.values())
        self.generator = Generator(graphs["step"].run, graphs["accumulate"].run,
                                   graphs["decode"].run, config["shape"],
                                   Sampling(self.p.cfg, self.p.top_k, self.p.top_p, self.p.seed))
        self.dim = int(graphs["step"].inputs["cond"].shape[-1])
        self.images = 0
        self.seconds: dict[str, deque] = {f"scale-{s}": deque(maxlen=10_000)
                                          for s in config["shape"]["scales"]}

    def process(self, inputs: dict[str, Chunk]) -> dict[str, list[Chunk]]:
        chunk = inputs["in"]
        out = []
        for k, embedding in enumerate(_embedding(chunk, self.dim, self.name)):
            enter = local_clock()
            made = self.generator(embedding, every_scale=self.p.strip)
            out.append(self._chunk(chunk, k, made, enter))
        self.images += len(out)
        return {"out": out}

    def _chunk(self, chunk: Chunk, k: int, made: Generated, enter: float) -> Chunk:
        png = encode_png(made.scales if self.p.strip else [made.image], self.p.scale_px)
        info = StreamInfo(name=f"{chunk.info.name}-{self.name}", type="image/png",
                          channels=("png_base64",), rate=0.0, dtype="string",
                          source_id=chunk.info.source_id)
        text = np.array([[base64.b64encode(png.tobytes()).decode()]], dtype=object)
        result = chunk.derive(text, chunk.timestamps[k:k + 1], info)
        t = enter
        for size, seconds in zip(self.generator.shape["scales"], made.seconds):
            result.trace.append((f"generate:scale-{size}", t, t + seconds))
            self.seconds[f"scale-{size}"].append(seconds)
            t += seconds
        return result

    def stop(self) -> None:
        for backend in self.backends:
            backend.close()

    def stats(self) -> dict:
        """Images drawn, and each scale's time (`stage_ms`, what `edgert bench` reports)."""
        return {"images": self.images, "stage_ms": {
            stage: {**{f"p{q}_ms": float(np.percentile(v, q)) * 1e3 for q in (50, 90, 99)},
                    "count": len(v)} for stage, v in self.seconds.items() if v}}


def encode_png(images: list[np.ndarray], repeat: int = 1) -> np.ndarray:
    """(3, H, W) images in [0, 1], side by side, as PNG bytes (uint8 array)."""
    strip = np.concatenate([np.clip(i, 0, 1).transpose(1, 2, 0) for i in images], 1)
    strip = np.repeat(np.repeat(strip, repeat, 0), repeat, 1)
    ok, data = cv2.imencode(".png", (strip[..., ::-1] * 255).round().astype(np.uint8))
    if not ok:
        raise RuntimeError("PNG encoding failed")
    return data.reshape(-1)


def decode_png(data: np.ndarray | str) -> np.ndarray:
    """PNG bytes (or their base64, as `Generate` sends them) -> (H, W, 3) RGB uint8."""
    if isinstance(data, str):
        data = np.frombuffer(base64.b64decode(data), np.uint8)
    return cv2.imdecode(np.asarray(data, np.uint8).reshape(-1), cv2.IMREAD_COLOR)[..., ::-1]
