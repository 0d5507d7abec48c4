"""Keep LSL on loopback for every test, give tests unique stream names, and start from an
empty model cache, as a newcomer's machine does: no test may pass only because this machine
has a trained model cached."""
import os
import tempfile
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ["LSLAPICFG"] = str(ROOT / "lsl_api.cfg")
os.environ["EDGERT_CACHE"] = tempfile.mkdtemp(prefix="edgert-test-cache-")
DATA = ROOT.parent / "shared" / "data"


@pytest.fixture
def uid() -> str:
    """A unique suffix so streams of parallel or earlier tests never collide."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def shared_data() -> Path:
    if not DATA.exists():
        pytest.skip(f"shared recordings not found at {DATA}")
    return DATA


@pytest.fixture(scope="module")
def edgert_cache(tmp_path_factory):
    """A cache folder of this module's own (EDGERT_CACHE), so trained models and bundles made
    here never mix with the user's or another module's."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EDGERT_CACHE", str(root))
        yield root
