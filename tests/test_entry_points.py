"""Every method entry point loads, and every `module:name` reference it declares (train,
export, evaluate, figures, demos, run, grid, config, ...) names a module of the package that
defines that name at its top level: checked from the source, so no method's libraries are
imported (a wrong reference once failed `edgert batch r3bench` after all its cells ran)."""
import ast
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import edgert

ROOT = Path(edgert.__file__).resolve().parent
METHODS = sorted(entry_points(group="edgert.methods"), key=lambda e: e.name)


def references(method) -> list[tuple[str, str]]:
    """(field, 'module:name') for every lazy reference of a Method."""
    out = []
    for field, value in vars(method).items():
        values = value.items() if isinstance(value, dict) else [(field, value)]
        for key, item in values:
            ref = getattr(item, "__name__", "")
            if callable(item) and ":" in ref:
                out.append((key, ref))
    return out


def defines(module: str, name: str) -> bool:
    parts = module.split(".")[1:]
    path = ROOT.joinpath(*parts)
    source = path.with_suffix(".py") if path.with_suffix(".py").exists() else path / "__init__.py"
    if not source.exists():
        return False
    tree = ast.parse(source.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return name in names


@pytest.mark.parametrize("entry", METHODS, ids=[e.name for e in METHODS])
def test_every_reference_a_method_declares_resolves(entry):
    method = entry.load()
    assert method.name == entry.name
    refs = references(method)
    assert refs, f"{entry.name} declares no callable"
    missing = [f"{field}: {ref}" for field, ref in refs if not defines(*ref.split(":"))]
    assert not missing, f"{entry.name} names code that does not exist: {missing}"


def test_the_check_catches_a_module_that_does_not_exist():
    assert not defines("edgert.methods.r3bench.figures", "draw")
    assert defines("edgert.methods.r3bench.job", "run")
