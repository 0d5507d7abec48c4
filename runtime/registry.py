"""Find node classes: built-in short names, or any `module:Class` path (methods plug in so)."""
from __future__ import annotations

import importlib

from runtime.node import Node

BUILTIN = {
    "lsl_inlet": "runtime.nodes.lsl:LSLInlet",
    "lsl_outlet": "runtime.nodes.lsl:LSLOutlet",
    "zmq_in": "runtime.nodes.zmq_io:ZMQIn",
    "zmq_out": "runtime.nodes.zmq_io:ZMQOut",
    "xdf_recorder": "runtime.nodes.record:XDFRecorder",
    "video": "runtime.nodes.video:Video",
    "window": "runtime.nodes.window:Window",
    "filter": "runtime.nodes.filter:Filter",
    "resample": "runtime.nodes.resample:Resample",
    "align": "runtime.nodes.align:Align",
    "epoch": "runtime.nodes.epoch:Epoch",
    "infer": "runtime.nodes.infer:Infer",
}


def node_class(ref: str) -> type[Node]:
    """The class for a built-in name or a `package.module:Class` reference."""
    path = BUILTIN.get(ref, ref)
    module_name, sep, attr = path.partition(":")
    if not sep:
        raise LookupError(f"unknown node {ref!r}: use a built-in ({', '.join(sorted(BUILTIN))}) "
                          "or a 'package.module:Class' path")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise LookupError(f"node {ref!r}: cannot import {module_name!r} ({e})") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Node)):
        raise LookupError(f"node {ref!r}: {module_name!r} has no Node subclass {attr!r}")
    return cls
