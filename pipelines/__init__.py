"""Ready pipelines shipped with edgert; `edgert run NAME` finds them by file name."""
from pathlib import Path

import yaml

HERE = Path(__file__).parent


def find(ref: str | Path) -> Path:
    """A pipeline file: the path as given if it exists, else a shipped one by name."""
    path = Path(ref)
    if path.exists():
        return path
    for candidate in (HERE / path.name, HERE / f"{path.name}.yaml"):
        if candidate.exists():
            return candidate
    return path


def available() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.yaml"))


def bundle_nodes(ref: str | Path) -> list[str]:
    """The nodes of a pipeline that load a bundle (what `--set NODE.bundle=DIR` points)."""
    spec = yaml.safe_load(find(ref).read_text())
    return [n["name"] for n in spec.get("nodes", []) if "bundle" in (n.get("params") or {})]
