"""Find node classes: built-in short names, or any `module:Class` path (methods plug in so).

A pipeline file may come from anyone, and importing a module runs its code. So a module
outside edgert that is not imported yet is first found and read without running it, and is
imported only if its source defines the class the pipeline names: `os:system` or a module
with side effects at import is refused before any of its code runs.
"""
from __future__ import annotations

import ast
import importlib
import sys
from importlib.machinery import PathFinder
from pathlib import Path

from edgert.runtime.node import Node

PACKAGES = ("streams", "devices", "export", "runtime", "methods", "pipelines", "benchmarks")

BUILTIN = {
    "lsl_inlet": "edgert.runtime.nodes.lsl:LSLInlet",
    "lsl_outlet": "edgert.runtime.nodes.lsl:LSLOutlet",
    "zmq_in": "edgert.runtime.nodes.zmq_io:ZMQIn",
    "zmq_out": "edgert.runtime.nodes.zmq_io:ZMQOut",
    "xdf_recorder": "edgert.runtime.nodes.record:XDFRecorder",
    "video": "edgert.runtime.nodes.video:Video",
    "window": "edgert.runtime.nodes.window:Window",
    "filter": "edgert.runtime.nodes.filter:Filter",
    "resample": "edgert.runtime.nodes.resample:Resample",
    "align": "edgert.runtime.nodes.align:Align",
    "epoch": "edgert.runtime.nodes.epoch:Epoch",
    "infer": "edgert.runtime.nodes.infer:Infer",
    "score": "edgert.runtime.nodes.score:Score",
}


def node_class(ref: str) -> type[Node]:
    """The class for a built-in name or a `package.module:Class` reference."""
    path = BUILTIN.get(ref, ref)
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise LookupError(f"unknown node {ref!r}: use a built-in ({', '.join(sorted(BUILTIN))}) "
                          "or a 'package.module:Class' path")
    if module_name.partition(".")[0] in PACKAGES:
        raise LookupError(f"node {ref!r}: edgert's modules are under 'edgert.' now; write "
                          f"'edgert.{path}'")
    if not (module_name.startswith("edgert.") or module_name in sys.modules
            or _defines_class(module_name, attr)):
        raise LookupError(f"node {ref!r}: {module_name!r} is not a Python source file that "
                          f"defines a class {attr!r}; it was not imported (name the module "
                          "where the Node subclass is defined)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise LookupError(f"node {ref!r}: cannot import {module_name!r} ({e})") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Node)):
        raise LookupError(f"node {ref!r}: {module_name!r} has no Node subclass {attr!r}")
    return cls


def _defines_class(module_name: str, attr: str) -> bool:
    """Whether the module's source defines class `attr` at top level, found and read without
    importing it or its parent packages."""
    parts = module_name.split(".")
    spec = PathFinder.find_spec(parts[0])
    for i in range(1, len(parts)):
        if spec is None or not spec.submodule_search_locations:
            return False
        spec = PathFinder.find_spec(".".join(parts[:i + 1]), spec.submodule_search_locations)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    try:
        tree = ast.parse(Path(spec.origin).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.ClassDef) and n.name == attr for n in tree.body)
