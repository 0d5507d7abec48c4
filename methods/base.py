"""The small interface every method package exposes through the `edgert.methods` entry points.

The CLI looks a method up by name and calls these; nothing in `runtime` names a method.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


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


@dataclass(frozen=True)
class Method:
    """`train(out, quick)` -> checkpoint folder; `export(out, checkpoint, fp16, int8)` ->
    Bundle; `evaluate(quick)` -> {"method", "config", "results": {VARIANT: {METRIC: value}}},
    and `figures(result, out)` draws that result beside `out` (a batch job's: the result
    `edgert batch` wrote, into its folder `out`) -> the paths written;
    `demos` maps a demo name to `fn(duration, run, out) -> report`, `run(pipeline,
    duration, status)` showing the started pipeline (and `status()`, a line under it), `out`
    the folder for the demo's figures, listed in the report's "figures"; `pipeline` names the
    default pipeline under `pipelines/` (stream methods) and `run` the job (batch methods);
    `sources(name, seconds)` -> (feeds, `--set` overrides) simulates that pipeline's
    inputs for `edgert bench`: each feed (a Replay of streams named from `name`, or a client
    of a service pipeline) has `open()`, `ready(timeout)`, `start()`, `wait()`, `stop()`. A batch job's
    `run(config, seed, out_dir) -> {metric: number}`; `grid(quick)` gives its default configs
    and `config` (a pydantic model) validates a user's. `requires` names the modules the
    method imports beyond edgert's own dependencies, which the extra `extra` installs.
    `formats` lists the recording formats `train` and `evaluate` read through `data=Data`."""

    name: str
    kind: Literal["stream", "batch"]
    train: Callable[..., Any] | None = None
    export: Callable[..., Any] | None = None
    evaluate: Callable[..., dict] | None = None
    figures: Callable[[dict, Path], list[Path]] | None = None
    pipeline: str | None = None
    run: Callable[..., Any] | None = None
    sources: Callable[[str, float], tuple[list, list[str]]] | None = None
    grid: Callable[[bool], list[dict]] | None = None
    config: type | None = None
    demos: dict[str, Callable[..., dict]] = field(default_factory=dict)
    extra: str | None = None
    requires: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        """The modules in `requires` that this environment cannot import."""
        return [m for m in self.requires if importlib.util.find_spec(m) is None]

    def install_hint(self) -> str:
        """The one command that installs what this method needs."""
        return f"from the edgert checkout: pip install '.[{self.extra}]'"

    def model_status(self) -> str:
        """Which model this method's demos use on this machine, and where it is."""
        from edgert.methods.cache import status

        return status(self.name)

    def checkpoint(self) -> Path | None:
        """This machine's trained checkpoint (what demos and `edgert bench` use), if any."""
        from edgert.methods.cache import CHECKPOINT, cache_folder

        path = cache_folder(self.name) / CHECKPOINT
        return path if path.exists() else None
