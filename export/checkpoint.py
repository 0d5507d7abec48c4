"""Reading a checkpoint a user hands in: tensors, numbers, strings and containers only.

`torch.load(weights_only=True)` refuses every pickled object but those, so a crafted file's
`__reduce__` never runs; its refusal, a truncated file and a file of another kind all become
one ExportError that names the file and what was expected of it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from edgert.export.bundle import ExportError


def load_checkpoint(path: str | Path, what: str, fix: str) -> dict[str, Any]:
    """The map saved at `path`, loaded with weights only; `what` names what the file should
    be ("a JanusVLN checkpoint"), `fix` how to make one."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no {what.removeprefix('a ').removeprefix('an ')}; "
                                f"{fix}")
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch.load fails in many ways on a file that is not one
        reason = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise ExportError(f"{path}: not {what} ({type(e).__name__}: {reason}); nothing in it "
                          f"was run. {fix}") from None
    if not isinstance(saved, dict):
        raise ExportError(f"{path}: not {what} (it holds a {type(saved).__name__}, not a map "
                          f"of weights). {fix}")
    return saved
