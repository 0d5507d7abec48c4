"""A live node runs a bundle: importing it must not pull in torch or the training libraries
(on a Jetson, torch is a heavy install and its memory is the GPU's). Those still failing are
marked: they are the next step of the torch-free live path."""
import subprocess
import sys

import pytest

HEAVY = ("torch", "sklearn", "neurokit2", "diffusers", "gymnasium")
STILL_HEAVY = pytest.mark.xfail(strict=True, reason="its live node still imports torch or "
                                "scikit-learn through its model modules")


@pytest.mark.parametrize("module", [
    "edgert.runtime.nodes.infer", "edgert.methods.btta_dg.node", "edgert.methods.cogmoe.node",
    pytest.param("edgert.methods.bolt.node", marks=STILL_HEAVY),
    pytest.param("edgert.methods.avde.node", marks=STILL_HEAVY),
    pytest.param("edgert.methods.janusvln.node", marks=STILL_HEAVY)])
def test_a_live_node_imports_no_training_library(module):
    code = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{module} imports {out.stdout.strip()}"
