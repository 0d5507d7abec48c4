import os
from pathlib import Path

from edgert.methods import cogmoe
from edgert.methods.cache import CHECKPOINT, cached_checkpoint


def test_a_checkpoint_older_than_its_method_code_is_trained_again(tmp_path, monkeypatch):
    monkeypatch.setenv("EDGERT_CACHE", str(tmp_path))
    trained = []

    def train(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CHECKPOINT).write_text(f"model {len(trained)}")
        trained.append(folder)

    path = cached_checkpoint("cogmoe", train)
    assert cached_checkpoint("cogmoe", train) == path == tmp_path / "cogmoe" / CHECKPOINT
    assert len(trained) == 1
    sources = Path(cogmoe.__file__).parent.glob("*.py")
    before = min(p.stat().st_mtime for p in sources) - 60
    os.utime(path, (before, before))
    cached_checkpoint("cogmoe", train)
    assert len(trained) == 2 and path.read_text() == "model 1"
