import logging
import os
from pathlib import Path

from edgert.methods import cogmoe
from edgert.methods.cache import CHECKPOINT, cached_checkpoint


def test_a_checkpoint_older_than_its_method_code_is_trained_again(tmp_path, monkeypatch,
                                                                   caplog):
    monkeypatch.setenv("EDGERT_CACHE", str(tmp_path))
    trained = []

    def train(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CHECKPOINT).write_text(f"model {len(trained)}")
        trained.append(folder)

    with caplog.at_level(logging.WARNING, logger="edgert.methods.cache"):
        path = cached_checkpoint("cogmoe", train, 0.5)
    said = " ".join(caplog.text.split())
    assert "no trained model cached" in said and "training one, about 0.5 min" in said
    assert cached_checkpoint("cogmoe", train, 0.5) == path == tmp_path / "cogmoe" / CHECKPOINT
    assert len(trained) == 1
    sources = Path(cogmoe.__file__).parent.glob("*.py")
    before = min(p.stat().st_mtime for p in sources) - 60
    os.utime(path, (before, before))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="edgert.methods.cache"):
        cached_checkpoint("cogmoe", train, 0.5)
    assert len(trained) == 2 and path.read_text() == "model 1"
    assert "older than the method's code" in caplog.text
