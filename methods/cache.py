"""Where a method keeps what it trains and exports on this machine, between runs, and where
it finds the shared real recordings."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

CHECKPOINT = "checkpoint.pt"


def recordings_folder() -> Path:
    """`$EDGERT_DATA`, else the `shared/data` folder beside the project."""
    env = os.environ.get("EDGERT_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def cache_folder(method: str) -> Path:
    """`$EDGERT_CACHE/<method>`, else `~/.cache/edgert/<method>`."""
    root = os.environ.get("EDGERT_CACHE") or Path.home() / ".cache" / "edgert"
    return Path(root) / method


def cached_checkpoint(method: str, train: Callable[[Path], object]) -> Path:
    """This machine's checkpoint of `method`, trained by `train(folder)` if there is none."""
    folder = cache_folder(method)
    if not (folder / CHECKPOINT).exists():
        train(folder)
    return folder / CHECKPOINT


def cached_bundle(method: str, train: Callable[[Path], object],
                  export: Callable[[Path, Path], object]) -> Path:
    """The bundle of this machine's trained model: `train(folder)` on first use, then
    `export(bundle, checkpoint)`, again whenever the checkpoint is newer than the bundle."""
    checkpoint = cached_checkpoint(method, train)
    bundle = checkpoint.parent / "bundle"
    manifest = bundle / "manifest.json"
    if not manifest.exists() or manifest.stat().st_mtime < checkpoint.stat().st_mtime:
        export(bundle, checkpoint)
    return bundle
