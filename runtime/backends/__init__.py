"""Backends run a bundle: `run(dict[str, ndarray]) -> dict[str, ndarray]`, whatever the engine."""
from edgert.runtime.backends.base import Backend, InputMismatch, open_backend

__all__ = ["Backend", "InputMismatch", "open_backend"]
