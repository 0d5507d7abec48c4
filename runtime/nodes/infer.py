"""Infer: runs a bundle on each chunk, and swaps in a new bundle version between two chunks."""
from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
from pydantic import Field

from edgert.devices.placement import check_placement, measure_peak_memory
from edgert.devices.profile import load_profile
from edgert.export.bundle import Bundle
from edgert.runtime.backends import Backend, open_backend
from edgert.runtime.node import Misconfigured, Node, Params, UserPath
from edgert.streams import Chunk, StreamInfo

log = logging.getLogger(__name__)


class Infer(Node):
    """Feeds each chunk (samples x channels) to the bundle's first input as one batch item
    and emits its first output stamped with the chunk's newest sample: a vector as one sample,
    a (steps, labels) sequence as one sample per step.

    `channels_first` (the manifest's preprocessing `layout`, or set here) transposes the chunk
    to channels x samples first. `swap(path)` loads and warms a new bundle beside the running
    one; the next chunk is served by it, so no chunk sees a half-loaded model; `watch` does
    that by itself when the bundle's manifest changes on disk.

    A stream whose channel names or rate differ from those the bundle was trained on (its
    manifest's `preprocessing.channels` and `rate_hz`) stops the run at its first chunk, with
    what to change: every chunk would be decoded wrongly alike.
    """

    class Params(Params):
        bundle: UserPath
        backend: str = "ort-cpu"
        variant: str = "fp32"
        threads: int | None = Field(1, ge=1, description="intra-op threads")
        channels_first: bool | None = None
        watch: float | None = Field(None, gt=0, description="seconds between checks of the "
                                    "bundle for a new version")
        profile: str | None = Field(None, description="device profile (name or YAML path) "
                                    "whose memory budget the bundle must fit")

    def start(self) -> None:
        self.backend = self._open(self.p.bundle)
        self.pending: Backend | None = None
        self.swaps = 0
        self.version = self._version(self.p.bundle)
        self.checked: StreamInfo | None = None  # the stream last checked against the bundle
        self.stopping = threading.Event()
        self.watcher = None
        if self.p.watch:
            self.watcher = threading.Thread(target=self._watch, daemon=True,
                                            name=f"edgert-{self.name}-watch")
            self.watcher.start()

    def _open(self, path: Path) -> Backend:
        """A warmed-up backend; with a profile, refused if its peak memory is over budget."""
        opened: list[Backend] = []

        def load() -> None:
            opened.append(open_backend(Bundle.load(path), self.p.backend, self.p.variant,
                                       self.p.threads))

        if self.p.profile is None:
            load()
            return opened[0]
        peak = measure_peak_memory(load)
        check_placement(peak, load_profile(self.p.profile), f"node {self.name!r}: bundle {path}")
        return opened[0]

    @staticmethod
    def _version(path: Path) -> float:
        manifest = Path(path) / "manifest.json"
        return manifest.stat().st_mtime_ns if manifest.exists() else 0

    def swap(self, path: Path) -> None:
        """Load the bundle at `path` and serve the next chunk with it."""
        self.pending = self._open(path)

    def _watch(self) -> None:
        while not self.stopping.wait(self.p.watch):
            version = self._version(self.p.bundle)
            if version != self.version:
                try:
                    self.swap(self.p.bundle)
                    self.version = version
                except Exception:
                    log.exception("node %r: new bundle at %s did not load; keeping the "
                                  "running one", self.name, self.p.bundle)

    def process(self, inputs: dict[str, Chunk]) -> dict[str, Chunk]:
        if self.pending is not None:
            self.backend, self.pending = self.pending, None
            self.swaps += 1
            self.checked = None
        chunk = inputs["in"]
        if self.checked != chunk.info:
            self._check(chunk.info)
            self.checked = chunk.info
        manifest = self.backend.bundle.manifest
        first = self.p.channels_first
        if first is None:
            first = manifest.preprocessing.get("layout", "channels_first") == "channels_first"
        x = chunk.data.T if first else chunk.data
        name = manifest.inputs[0].name
        feed = {name: np.ascontiguousarray(x[None], dtype=manifest.inputs[0].dtype)}
        self.backend.check(feed)
        out = self.backend.run(feed)[manifest.outputs[0].name][0]
        rows = out.reshape(-1, out.shape[-1]) if out.ndim > 1 else out.reshape(1, -1)
        labels = tuple(manifest.labels) or tuple(f"out{i}" for i in range(rows.shape[1]))
        info = StreamInfo(name=f"{chunk.info.name}-{self.name}", type="Prediction",
                          channels=labels, rate=0.0, dtype=str(out.dtype))
        stamps = np.full(len(rows), chunk.timestamps[-1])
        return {"out": chunk.derive(rows, stamps, info)}

    def check(self, port: str, info: StreamInfo) -> None:
        self._check(info)

    def _check(self, info: StreamInfo) -> None:
        """The stream against the channels and rate the bundle was trained on."""
        want = self.backend.bundle.manifest.preprocessing
        where = f"bundle {self.backend.bundle.path}"
        channels = tuple(want.get("channels") or ())
        named = info.channels and info.channels != StreamInfo.make("", info.n_channels).channels
        if channels and named and tuple(c.upper() for c in info.channels) != tuple(
                c.upper() for c in channels):
            upper = {c.upper() for c in info.channels}
            missing = [c for c in channels if c.upper() not in upper]
            fix = (f"the stream lacks {missing}: train on this montage (edgert train ... "
                   "--data)" if missing else "pick them in this order at the source: "
                   f"--set SOURCE.channels=[{','.join(channels)}]")
            raise Misconfigured(f"{where} was trained on {len(channels)} channels "
                                f"{list(channels)}; stream {info.name!r} has "
                                f"{info.n_channels}: {fix}")
        rate = want.get("rate_hz")
        if rate and info.rate > 0 and abs(info.rate - rate) > 1e-6 * rate:
            raise Misconfigured(f"{where} was trained at {rate:g} Hz; stream {info.name!r} "
                                f"runs at {info.rate:g} Hz: add a `resample` node (rate: "
                                f"{rate:g}) after the source, or train at this rate")

    def stop(self) -> None:
        self.stopping.set()
        if self.watcher is not None:
            self.watcher.join(2)

    def stats(self) -> dict:
        return {"provider": self.backend.provider, "swaps": self.swaps}
