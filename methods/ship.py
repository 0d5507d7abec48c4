"""The bundles that ship inside the package, so each live demo answers within seconds on a
fresh machine instead of training first.

`python -m edgert.methods.ship btta_dg bolt cogmoe avde janusvln` runs each method's own quick training
(`edgert train METHOD --quick`, seed 0) and export, and writes the result to
`methods/METHOD/shipped/`, the command, seed and code version in the manifest's provenance.
`edgert verify` reports whether the installed code is the code a shipped bundle was made
with; a slow test retrains quick and checks the shipped bundle against the new one.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from edgert import __version__
from edgert.export.bundle import Bundle, Provenance, sources_sha256
from edgert.methods.cache import CHECKPOINT
from edgert.runtime.methods import find

METHODS = Path(__file__).resolve().parent
SEED = 0


def shipped_folder(method: str) -> Path:
    """Where `method`'s shipped bundle lives: `shipped/bundle`, and what the method's node
    reads beside a bundle (BOLT's router) in `shipped/`."""
    return METHODS / method / "shipped"


def code_version() -> str:
    """edgert's version and, in a git checkout, the commit, marked dirty if code was edited
    since (the shipped folders being rewritten do not count)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=METHODS, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        edited = git("status", "--porcelain", "--", ".", ":(exclude)*/shipped/*")
    except (OSError, subprocess.CalledProcessError):
        return f"{__version__} (no git)"
    return f"{__version__} ({commit}{'-dirty' if edited else ''})"


def ship(name: str, out: Path | None = None) -> Path:
    """Train `name` quick, export it, and replace `out` (default: its shipped folder) with
    the result; returns the bundle."""
    method = find(name)
    with tempfile.TemporaryDirectory() as tmp:
        trained = Path(tmp) / "trained"
        checkpoint = Path(method.train(trained, True))
        checkpoint = checkpoint if checkpoint.is_file() else checkpoint / CHECKPOINT
        bundle = method.export(out=Path(tmp) / "bundle", checkpoint=checkpoint)
        bundle.manifest.provenance = Provenance(
            command=f"edgert train {name} --quick --out DIR && edgert export {name} "
                    f"--checkpoint DIR/checkpoint.pt --out DIR/bundle",
            seed=SEED, code_version=code_version(), sources=f"methods/{name}",
            sources_sha256=sources_sha256(METHODS / name))
        bundle.save_manifest()
        out = Path(out or shipped_folder(name))
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for extra in checkpoint.parent.iterdir():  # what a node reads beside the bundle;
            if extra.is_file() and extra.suffix != ".pt":  # checkpoints live in the bundle
                shutil.copy2(extra, out / extra.name)
        shutil.copytree(bundle.path, out / "bundle")
    Bundle.load(out / "bundle")
    return out / "bundle"


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["btta_dg", "bolt", "cogmoe", "avde", "janusvln"]:
        print(f"{arg}: shipped bundle written to {ship(arg)}")
