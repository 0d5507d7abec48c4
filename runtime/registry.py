"""Find node classes: built-in short names, or any `module:Class` path (methods plug in so)."""
from __future__ import annotations

import importlib

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
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise LookupError(f"node {ref!r}: cannot import {module_name!r} ({e})") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Node)):
        raise LookupError(f"node {ref!r}: {module_name!r} has no Node subclass {attr!r}")
    return cls
