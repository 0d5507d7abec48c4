"""Ready pipelines shipped with edgert; `edgert run NAME` finds them by file name."""
from pathlib import Path

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
