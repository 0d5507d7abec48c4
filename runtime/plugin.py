"""The plug-in contract: what a method package exposes through the `edgert.methods` entry
points (`METHOD = Method(...)`), and the types its callables take and give.

The CLI looks a method up by name and calls these; the engine names no method. Every callable
may be `lazy("module:function")`, imported on first call, so listing methods imports none of
their libraries.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol


def lazy(ref: str) -> Callable[..., Any]:
    """`module:function`, imported on the first call: listing methods (for `edgert demo` or
    `edgert bench`) must not import torch and every model of every method."""

    def call(*args, **kwargs):
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = ref
    return call


class DataError(ValueError):
    """A user's recording cannot be used; the message names the file and the field."""


def own_out(out: Path | None) -> Path:
    """Where a model of a user's recordings goes: a folder they name, never the cache the
    demos use."""
    if out is None:
        raise DataError("give --out DIR: a model of your recordings must not replace the "
                        "demo's cached one")
    return Path(out)


@dataclass(frozen=True)
class Data:
    """A user's recordings, as `--data PATH... [--format F] [--labels CLASS=MARKER...]
    [--markers NAME]` name them: `format` None means each file's suffix says it; `markers`
    names the cue stream of a recording with several string streams."""

    paths: tuple[Path, ...]
    format: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    markers: str | None = None


class Train(Protocol):
    """Train here (no weights are downloaded) into `out` (default: the method's cache), on
    the simulator or on `data`; returns the checkpoint file or folder."""

    def __call__(self, out: Path | None = None, quick: bool = False, *,
                 data: Data | None = None) -> Path: ...


class Export(Protocol):
    """A checkpoint (default: the cached one, trained if absent) as a bundle in `out`."""

    def __call__(self, out: Path, checkpoint: Path | None = None, fp16: bool = False,
                 int8: bool = False) -> Any: ...


class Evaluate(Protocol):
    """`{"method", "config", "results": {VARIANT: {METRIC: value}}}`, on the simulator or
    on `data`."""

    def __call__(self, quick: bool = False, *, data: Data | None = None) -> dict: ...


class Figures(Protocol):
    """Draw `result` beside `out` (a batch job's: into its folder); the paths written."""

    def __call__(self, result: dict, out: Path) -> list[Path]: ...


class Demo(Protocol):
    """Run a live demo for `duration` s, `run(pipeline, duration, status)` showing it, its
    figures into `out`; returns the run's report with the demo's `metrics` and `figures`."""

    def __call__(self, duration: float | None, run: Callable[..., None], out: Path) -> dict: ...


class Sources(Protocol):
    """The pipeline's inputs simulated for `edgert bench`: feeds (each with `open()`,
    `ready(timeout)`, `start()`, `wait()`, `stop()`) named from `name`, and `--set`s."""

    def __call__(self, name: str, seconds: float) -> tuple[list, list[str]]: ...


class Run(Protocol):
    """One cell of a batch job: its metrics."""

    def __call__(self, config: dict, seed: int, out_dir: Path) -> dict[str, float]: ...


class Grid(Protocol):
    """A batch job's default configs."""

    def __call__(self, quick: bool) -> list[dict]: ...


@dataclass(frozen=True)
class Method:
    """One method: a live one (`kind="stream"`: train, export, evaluate, figures, its
    default `pipeline` under `pipelines/`, `demos`, `sources`) or a batch job
    (`kind="batch"`: `run`, `grid`, `config`, a pydantic model that validates a user's
    config, and `figures`). `requires` names the modules the method imports beyond edgert's
    own dependencies, which the extra `extra` installs; `formats` lists the recording formats
    `train` and `evaluate` read through `data=Data`."""

    name: str
    kind: Literal["stream", "batch"]
    train: Train | None = None
    export: Export | None = None
    evaluate: Evaluate | None = None
    figures: Figures | None = None
    pipeline: str | None = None
    run: Run | None = None
    sources: Sources | None = None
    grid: Grid | None = None
    config: Callable[..., Any] | None = None
    demos: dict[str, Demo] = field(default_factory=dict)
    extra: str | None = None
    requires: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        """The modules in `requires` that this environment cannot import."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def install_hint(self) -> str:
        """The one command that installs what this method needs."""
        return f"from the edgert checkout: pip install '.[{self.extra}]'"
