"""Where a method keeps what it trains and exports on this machine, between runs, and where
it finds the shared real recordings."""
from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

CHECKPOINT = "checkpoint.pt"
log = logging.getLogger(__name__)


def recordings_folder() -> Path:
    """Where the shared real recordings are: `$EDGERT_DATA`; else the first `shared/data` that
    exists beside the checkout this code runs from (an editable install) or beside the
    working folder or a folder above it (a checkout installed with `pip install .`); else the
    checkout's, which a caller finds missing and says so."""
    env = os.environ.get("EDGERT_DATA")
    if env:
        return Path(env)
    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    cwd = Path.cwd().resolve()
    found = (p / "shared" / "data" for p in (cwd, *cwd.parents))
    return next((f for f in (beside, *found) if f.is_dir()), beside)


def cache_folder(method: str) -> Path:
    """`$EDGERT_CACHE/<method>`, else `~/.cache/edgert/<method>`."""
    root = os.environ.get("EDGERT_CACHE") or Path.home() / ".cache" / "edgert"
    return Path(root) / method


def stale(checkpoint: Path, method: str) -> bool:
    """Whether the method's own code changed after `checkpoint` was trained: a model made for
    other features or other layers must not be served, nor fail to load."""
    sources = (Path(__file__).parent / method).glob("*.py")
    return any(path.stat().st_mtime > checkpoint.stat().st_mtime for path in sources)


def cached_checkpoint(method: str, train: Callable[[Path], object], minutes: float) -> Path:
    """This machine's checkpoint of `method`, trained by `train(folder)` (about `minutes` on
    2 cores, said before it starts) if there is none or the method's code is newer than it."""
    path = cache_folder(method) / CHECKPOINT
    if not path.exists() or stale(path, method):
        why = "no trained model cached" if not path.exists() else "the cached model is older "\
              "than the method's code"
        log.warning("%s: %s in %s: training one, about %g min on 2 cores", method, why,
                    path.parent, minutes)
        train(path.parent)
    return path


def current(method: str) -> bool:
    """Whether this machine has its own checkpoint of `method`, newer than the method's code."""
    path = cache_folder(method) / CHECKPOINT
    return path.exists() and not stale(path, method)


def shipped_bundle(method: str) -> Path | None:
    """The bundle that ships inside the package (see `edgert.methods.ship`), if any."""
    path = Path(__file__).parent / method / "shipped" / "bundle"
    return path if (path / "manifest.json").exists() else None


def cached_bundle(method: str, train: Callable[[Path], object],
                  export: Callable[[Path, Path], object], minutes: float) -> Path:
    """The bundle of this machine's own trained model when there is a current one (exported
    again whenever the checkpoint is newer than the bundle); else the bundle shipped with
    the package; else `train(folder)` first, then `export(bundle, checkpoint)`."""
    shipped = shipped_bundle(method)
    if shipped and not current(method):
        return shipped
    checkpoint = cached_checkpoint(method, train, minutes)
    bundle = checkpoint.parent / "bundle"
    manifest = bundle / "manifest.json"
    if not manifest.exists() or manifest.stat().st_mtime < checkpoint.stat().st_mtime:
        export(bundle, checkpoint)
    return bundle


def trained_checkpoint(method: str) -> Path | None:
    """This machine's trained checkpoint of `method` (what demos and `edgert bench` use), if
    any."""
    path = cache_folder(method) / CHECKPOINT
    return path if path.exists() else None


def status(method: str) -> str:
    """Which model `method`'s demos use on this machine, and where it is."""
    path = cache_folder(method) / CHECKPOINT
    shipped = shipped_bundle(method)
    if current(method):
        return f"trained here, {path.parent}"
    if shipped:
        older = f"; the one in {path.parent} is older than the code" if path.exists() else ""
        return f"the shipped bundle, {shipped}{older}"
    if path.exists():
        return f"{path.parent}, older than the method's code: retrained on first use"
    return f"none yet: first use trains one into {path.parent}"
