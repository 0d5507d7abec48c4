"""Imports go one way (DESIGN.md): streams and devices import nothing of the project; export
may use them; runtime (the engine) may use those three and nothing of methods, benchmarks or
the CLI; methods may use the engine; cli and benchmarks may use everything. Checked from the
source of every module, imports inside functions included."""
import ast
from pathlib import Path

import pytest

import edgert

ROOT = Path(edgert.__file__).resolve().parent
BELOW = {"streams": set(), "devices": set(), "export": {"streams", "devices"},
         "runtime": {"streams", "devices", "export"},
         "methods": {"streams", "devices", "export", "runtime"}}
ANYONE = {"pipelines"}  # the shipped YAML files and their lookup


def imported(path: Path) -> set[str]:
    """The edgert top-level folders a module imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            parts = name.split(".")
            if parts[0] == "edgert" and len(parts) > 1:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("layer", sorted(BELOW))
def test_a_layer_imports_only_the_layers_below_it(layer):
    allowed = BELOW[layer] | ANYONE | {layer}
    wrong = {str(p.relative_to(ROOT)): sorted(imported(p) - allowed)
             for p in (ROOT / layer).rglob("*.py") if imported(p) - allowed}
    assert not wrong, f"{layer} imports upward: {wrong}"


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from edgert.methods.cache import status\n")
    assert imported(module) == {"methods"}
