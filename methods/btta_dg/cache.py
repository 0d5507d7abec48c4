"""Where the trained model and its bundle are kept between runs."""
from __future__ import annotations

import os
from pathlib import Path


def default_folder() -> Path:
    """`$EDGERT_CACHE/btta_dg`, else `~/.cache/edgert/btta_dg`."""
    root = os.environ.get("EDGERT_CACHE") or Path.home() / ".cache" / "edgert"
    return Path(root) / "btta_dg"
