"""BTTA-DG's live nodes, around the `infer` node that runs the SincAdaptNet bundle.

`EuclideanAlign` whitens each trial by the user's mean covariance so far; `Adapt` turns a
trial's step probabilities into adapted class probabilities. Each keeps this user's state in
a JSON file (rewritten atomically after every trial), so the next session of the same user
starts where this one ended.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from pydantic import Field

from edgert.export.bundle import Bundle
from edgert.methods.btta_dg.align import IncrementalAlignment
from edgert.methods.btta_dg.bayes import BayesianAdapter, SourceStats, write_json
from edgert.runtime.node import BadChunk, Misconfigured, Node, Params, UserPath
from edgert.streams import Chunk, StreamInfo


class EuclideanAlign(Node):
    """Incremental Euclidean alignment of (samples x channels) trials."""

    class Params(Params):
        state: UserPath | None = Field(None, description="JSON file of this user's reference "
                                       "covariance; loaded if present, written after each trial")

    def start(self) -> None:
        path = self.p.state
        self.align = (IncrementalAlignment.from_state(json.loads(Path(path).read_text()))
                      if path is not None and Path(path).exists() else None)

    def check(self, port: str, info: StreamInfo) -> None:
        if self.align is not None and info.channels and \
                self.align.total.shape[0] != info.n_channels:
            raise Misconfigured(f"stream {info.name!r} has {info.n_channels} channels; the "
                                f"saved reference {self.p.state} has "
                                f"{self.align.total.shape[0]}: give this user's stream, or "
                                f"another {self.name}.state")

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        chunk = inputs["in"]
        if self.align is None:
            self.align = IncrementalAlignment(chunk.data.shape[1])
        elif self.align.total.shape[0] != chunk.data.shape[1]:
            raise BadChunk("channels", f"node {self.name!r}: stream {chunk.info.name!r} has "
                           f"{chunk.data.shape[1]} channels; the saved reference has "
                           f"{self.align.total.shape[0]}")
        out = self.align(np.asarray(chunk.data, float).T).T
        if self.p.state is not None:
            write_json(self.p.state, self.align.state())
        return {"out": chunk.derive(np.ascontiguousarray(out, np.float32))}

    def stats(self) -> dict:
        return {"trials": self.align.count if self.align else 0}


class Adapt(Node):
    """`out`: the posterior (prior x mixture vote); `prior`: the network's prediction alone."""

    outputs = ("out", "prior")

    class Params(Params):
        bundle: UserPath
        state: UserPath | None = Field(None, description="JSON file of this user's adaptation; "
                                   "loaded if present, written after each trial")
        tempering: float = Field(1.0, ge=0, description="weight of the mixture's vote")
        warmup: int = Field(4, ge=0, description="trials the mixture learns before it votes")
        pseudo_count: float = Field(10.0, gt=0, description="weight of the source statistics "
                                    "in trials")
        features: str = Field("dirichlet", pattern="^(dirichlet|mean_softmax)$")
        use_gmm: bool = True

    def start(self) -> None:
        manifest = Bundle.load(self.p.bundle).manifest
        self.labels = tuple(manifest.labels)
        if self.p.state is not None and Path(self.p.state).exists():
            self.adapter = BayesianAdapter.load(self.p.state)
            self.resumed = self.adapter.gmm.trials
        else:
            self.adapter = BayesianAdapter(self._source(manifest), self.p.tempering,
                                           self.p.warmup, self.p.pseudo_count, self.p.use_gmm)
            self.resumed = 0
        self.trials = 0

    def _source(self, manifest) -> SourceStats:
        sources = manifest.preprocessing.get("btta_dg", {}).get("sources", {})
        if self.p.features not in sources:
            raise ValueError(f"node {self.name!r}: bundle {self.p.bundle} has no source "
                             f"statistics for features {self.p.features!r} (manifest "
                             "preprocessing.btta_dg.sources); export it with "
                             "`edgert export btta_dg`")
        return SourceStats.from_dict(sources[self.p.features])

    def check(self, port: str, info: StreamInfo) -> None:
        if info.channels and info.n_channels != len(self.labels):
            raise Misconfigured(f"stream {info.name!r} has {info.n_channels} channels; bundle "
                                f"{self.p.bundle} has {len(self.labels)} classes "
                                f"{list(self.labels)}: feed it the decoder's probabilities")

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        chunk = inputs["in"]
        if chunk.data.ndim != 2 or chunk.data.shape[1] != len(self.labels):
            raise BadChunk("channels", f"node {self.name!r}: stream {chunk.info.name!r} has "
                           f"{chunk.data.shape[-1]} channels; the bundle has "
                           f"{len(self.labels)} classes")
        post, prior = self.adapter.step(np.asarray(chunk.data, float))
        self.trials += 1
        if self.p.state is not None:
            self.adapter.save(self.p.state)
        info = replace(chunk.info, name=f"{chunk.info.name}-{self.name}", channels=self.labels,
                       dtype="float32")
        stamp = chunk.timestamps[-1:]
        return {"out": chunk.derive(post[None].astype(np.float32), stamp, info),
                "prior": chunk.derive(prior[None].astype(np.float32), stamp,
                                      replace(info, name=f"{info.name}-prior"))}

    def stats(self) -> dict:
        return {"trials": self.trials, "resumed_from_trials": self.resumed}
