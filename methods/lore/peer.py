"""The cblearn comparison (SOE and t-STE, the ordinal-embedding library people use), run in
the peer virtual environment that setup_peer.sh makes: cblearn pins numpy<2, so it cannot
share the main environment. Without the peer the comparison is skipped with a hint."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from edgert.methods.cache import cache_folder

HERE = Path(__file__).resolve().parent
log = logging.getLogger(__name__)


def peer_python() -> Path | None:
    """The peer's python, if setup_peer.sh finished (it leaves an `ok` file last)."""
    venv = cache_folder("peers") / "cblearn"
    return venv / "bin" / "python" if (venv / "ok").exists() else None


def cblearn_embeddings(train: np.ndarray, test: np.ndarray, n: int, runs: dict[str, tuple[str, int]],
                       seed: int) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Per run name, (method, dim) -> the cblearn embedding and cblearn's own held-out score;
    both empty (and a hint logged) when the peer is not set up."""
    python = peer_python()
    if python is None:
        log.warning("cblearn peer not set up, SOE/t-STE comparison skipped; set it up with: "
                    "bash %s", HERE / "setup_peer.sh")
        return {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.json"
        np.savez(src, train=train, test=test, n=n, seed=seed, names=list(runs),
                 methods=[m for m, _ in runs.values()], dims=[d for _, d in runs.values()])
        done = subprocess.run([str(python), str(HERE / "cblearn_peer.py"), str(src), str(dst)],
                              capture_output=True, text=True, timeout=900,
                              env=os.environ | {"OMP_NUM_THREADS": "1"})
        if done.returncode:
            raise RuntimeError(f"cblearn peer failed:\n{done.stderr[-3000:]}")
        out = json.loads(dst.read_text())
    return {k: np.array(v) for k, v in out["embeddings"].items()}, out["scores"]
