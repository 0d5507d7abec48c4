"""The small interface every method package exposes through the `edgert.methods` entry points.

The CLI looks a method up by name and calls these; nothing in `runtime` names a method.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal


def lazy(ref: str) -> Callable[..., Any]:
    """`module:function`, imported on the first call: listing methods (for `edgert demo` or
    `edgert bench`) must not import torch and every model of every method."""

    def call(*args, **kwargs):
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = ref
    return call


@dataclass(frozen=True)
class Method:
    """`train(out, quick)` -> checkpoint folder; `export(out, checkpoint, fp16, int8)` ->
    Bundle; `evaluate(quick)` -> {"method", "config", "results": {VARIANT: {METRIC: value}}};
    `demos` maps a demo name to `fn(duration, run) -> report`; `pipeline` names the
    default pipeline under `pipelines/` (stream methods) and `run` the job (batch methods);
    `sources(name, seconds)` -> (recordings, `--set` overrides) simulates that pipeline's
    inputs as streams named from `name` (what `edgert bench` replays into it). A batch job's
    `run(config, seed, out_dir) -> {metric: number}`; `grid(quick)` gives its default configs
    and `config` (a pydantic model) validates a user's."""

    name: str
    kind: Literal["stream", "batch"]
    train: Callable[..., Any] | None = None
    export: Callable[..., Any] | None = None
    evaluate: Callable[..., dict] | None = None
    pipeline: str | None = None
    run: Callable[..., Any] | None = None
    sources: Callable[[str, float], tuple[list, list[str]]] | None = None
    grid: Callable[[bool], list[dict]] | None = None
    config: type | None = None
    demos: dict[str, Callable[..., dict]] = field(default_factory=dict)
