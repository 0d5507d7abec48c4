"""Methods plug in through the `edgert.methods` entry-point group; the runtime never names them."""
from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

GROUP = "edgert.methods"


def installed() -> dict[str, Any]:
    """Entry points by method name (not loaded yet)."""
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def find(ref: str) -> Any:
    """A method by entry-point name, or any object by `package.module:attr` path."""
    if ":" in ref:
        module, _, attr = ref.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise LookupError(f"cannot load {ref!r}: {e}") from None
    found = installed()
    if ref not in found:
        names = ", ".join(sorted(found)) or "none installed"
        raise LookupError(f"no method {ref!r} in the {GROUP!r} entry points ({names}); "
                          "give an installed method or a 'package.module:object' path")
    method = found[ref].load()
    missing = getattr(method, "missing", lambda: [])()
    if missing:
        verb = "is" if len(missing) == 1 else "are"
        raise LookupError(f"method {ref!r} needs {', '.join(missing)}, which {verb} not "
                          f"installed: {method.install_hint()}")
    return method


def demos() -> dict[str, Any]:
    """Demo functions of every installed method, by demo name (loading a method's entry point
    imports only its small `__init__`)."""
    found = {}
    for ep in installed().values():
        found.update(getattr(ep.load(), "demos", {}))
    return found


def for_pipeline(name: str) -> Any | None:
    """The installed method whose default pipeline is `name`, if any."""
    for ep in installed().values():
        method = ep.load()
        if getattr(method, "pipeline", None) == name:
            return method
    return None
