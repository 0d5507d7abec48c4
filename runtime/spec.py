"""Pipeline files: the YAML schema (pydantic), `--set` overrides and errors that say how to fix."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


log = logging.getLogger(__name__)


class PipelineError(ValueError):
    """A pipeline that cannot be built; the message names the file, node and field."""


class NodeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")
    node: str
    params: dict[str, Any] = {}
    thread: bool = False
    on_error: Literal["continue", "restart", "stop"] = Field(
        "continue", description="when the node raises: count it and go on, restart the node "
        "(stop, then start, backing off 0.1 s doubling to 5 s), or stop the pipeline")


class EdgeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(alias="from")
    target: str = Field(alias="to")
    policy: Literal["block", "latest"] = "block"
    capacity: int = Field(64, gt=0)
    deadline_ms: float | None = Field(None, gt=0)


class PipelineSpec(BaseModel):
    """A pipeline: nodes, and edges between them (omitted edges chain the nodes in order)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    nodes: list[NodeSpec] = Field(min_length=1)
    edges: list[EdgeSpec] | None = None
    metrics_port: int | None = Field(None, ge=0, le=65535)
    priority: int | None = Field(None, ge=-20, le=19, description="nice value of the "
                                 "pipeline's threads (-20 highest; none: the caller's); "
                                 "raising it needs root or CAP_SYS_NICE")

    @field_validator("nodes")
    @classmethod
    def unique_names(cls, nodes: list[NodeSpec]) -> list[NodeSpec]:
        names = [n.name for n in nodes]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"node names must be unique; repeated: {twice}")
        return nodes

    def chain(self) -> list[EdgeSpec]:
        """The edges, or a chain of the nodes in listed order when the file gives none."""
        if self.edges is not None:
            return self.edges
        return [EdgeSpec(source=a.name, target=b.name) for a, b in zip(self.nodes, self.nodes[1:])]

    def node(self, name: str) -> NodeSpec:
        for spec in self.nodes:
            if spec.name == name:
                return spec
        raise KeyError(name)


def _where(loc: tuple, raw: dict) -> str:
    """'node 'filter' field 'params.order'' from a pydantic error location."""
    if len(loc) >= 2 and loc[0] in ("nodes", "edges") and isinstance(loc[1], int):
        items = raw.get(loc[0]) or []
        item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) and isinstance(
            items[loc[1]], dict) else {}
        label = (item.get("name") or f"#{loc[1] + 1}" if loc[0] == "nodes"
                 else f"{item.get('from', '?')} -> {item.get('to', '?')}")
        field = ".".join(str(x) for x in loc[2:]) or "(whole entry)"
        return f"{loc[0][:-1]} {label!r} field {field!r}"
    return f"field {'.'.join(str(x) for x in loc) or '(top level)'!r}"


def describe(error: ValidationError, raw: dict, origin: str) -> str:
    lines = [f"{origin}: invalid pipeline"]
    for e in error.errors():
        lines.append(f"  {_where(e['loc'], raw)}: {e['msg']}")
    return "\n".join(lines)


def apply_overrides(raw: dict, overrides: list[str], origin: str) -> dict:
    """Apply `NODE.FIELD=VALUE` (VALUE read as YAML) to node params; `NODE.thread` too."""
    listed = raw.get("nodes")
    nodes = {n.get("name"): n for n in listed if isinstance(n, dict)} \
        if isinstance(listed, list) else {}
    for item in overrides:
        key, sep, value = item.partition("=")
        node, dot, field = key.partition(".")
        if not sep or not dot or not field:
            raise PipelineError(f"--set {item!r}: expected NODE.FIELD=VALUE, e.g. "
                                "--set filter.order=4")
        if node not in nodes:
            raise PipelineError(f"{origin}: --set {item!r} names node {node!r}, but the "
                                f"pipeline's nodes are {sorted(nodes)}")
        if not value.strip():
            raise PipelineError(f"{origin}: --set {item!r}: the value is empty (an empty "
                                f"`{field}` would match anything); give a value, or write "
                                f"{key}=null to clear the field")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as e:
            problem = getattr(e, "problem", None) or "not valid YAML"
            raise PipelineError(f"{origin}: --set {item!r}: the value {value!r} is not valid "
                                f"YAML ({problem}); write a list as [8,30], a string in "
                                "quotes") from None
        if field == "thread":
            nodes[node]["thread"] = parsed
        else:
            nodes[node].setdefault("params", {})[field] = parsed
    return raw


def carried(raw: dict, overrides: list[str]) -> list[str]:
    """`--set`s that a bundle named with `--set NODE.bundle=DIR` carries for this pipeline
    (manifest `preprocessing.pipeline.<pipeline name>`: what training learnt about the
    recording, e.g. the cue stream, the cue markers, the channels), for the fields the user
    did not set; `{bundle}` in a value is that bundle's folder."""
    listed = raw.get("nodes")
    names = {n.get("name") for n in listed if isinstance(n, dict)} \
        if isinstance(listed, list) else set()
    given = {item.partition("=")[0] for item in overrides}
    out = []
    for item in overrides:
        key, _, folder = item.partition("=")
        if not key.endswith(".bundle") or not folder.strip():
            continue
        try:
            manifest = json.loads((Path(folder).expanduser() / "manifest.json").read_text())
            sets = manifest["preprocessing"]["pipeline"][raw.get("name")]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # the node that loads the bundle says what is wrong with it
        for field, value in sets.items():
            if field in given or field.partition(".")[0] not in names:
                continue
            value = value.replace("{bundle}", folder) if isinstance(value, str) else value
            out.append(f"{field}={json.dumps(value)}")
            given.add(field)
    if out:
        log.info("from the bundle: --set %s", " --set ".join(out))
    return out


def parse(raw: Any, origin: str, overrides: list[str] = ()) -> PipelineSpec:
    if not isinstance(raw, dict):
        raise PipelineError(f"{origin}: a pipeline is a mapping with 'name' and 'nodes'; "
                            f"got {type(raw).__name__}")
    overrides = list(overrides)
    raw = apply_overrides(raw, carried(raw, overrides) + overrides, origin)
    try:
        return PipelineSpec.model_validate(raw)
    except ValidationError as e:
        raise PipelineError(describe(e, raw, origin)) from None


def load(path: str | Path, overrides: list[str] = ()) -> PipelineSpec:
    """Read and validate a pipeline file; errors name the file, node and field."""
    path = Path(path)
    if not path.exists():
        raise PipelineError(f"{path}: no such pipeline file")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise PipelineError(f"{path}: not valid YAML: {e}") from None
    return parse(raw, str(path), overrides)
