"""The distribution installs one import name, `edgert`, and the code imports only through it."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("benchmarks", "cli", "devices", "export", "methods", "pipelines", "runtime",
           "streams")


def ours(path: Path) -> bool:
    """A file of the project, not of a hidden folder (.git, the benchmark peers' venvs)."""
    return not any(part.startswith(".") for part in path.relative_to(ROOT).parts)


def package_folders() -> set[str]:
    """Every folder with an __init__.py, as the dotted name it installs under."""
    names = {"edgert"}
    for init in filter(ours, ROOT.glob("*/**/__init__.py")):
        parts = init.parent.relative_to(ROOT).parts
        if parts[0] in FOLDERS:
            names.add(".".join(("edgert", *parts)))
    return names


def test_every_package_folder_installs_under_edgert():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["package-dir"] == {"edgert": "."}
    assert set(config["packages"]) == package_folders()


def test_no_module_imports_a_top_level_folder_by_its_bare_name():
    bare = re.compile(rf"^\s*(from|import) ({'|'.join(FOLDERS)})(\.|\s)", re.MULTILINE)
    offenders = [str(p.relative_to(ROOT)) for p in filter(ours, ROOT.rglob("*.py"))
                 if bare.search(p.read_text())]
    assert offenders == []


def test_entry_points_and_the_script_name_edgert_modules():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    targets = [project["scripts"]["edgert"], *project["entry-points"]["edgert.methods"].values()]
    assert all(t.startswith("edgert.") for t in targets)


def test_every_file_of_a_shipped_bundle_is_package_data():
    """A shipped bundle's sub-bundles (BTTA-DG's baseline, AVDE's generator) install too."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]
    for bundle in ROOT.glob("methods/*/shipped/bundle"):
        method = bundle.parents[1]
        patterns = data.get(f"edgert.methods.{method.name}", [])
        for path in filter(Path.is_file, bundle.rglob("*")):
            relative = path.relative_to(method)
            assert any(relative.match(p) and len(relative.parts) == len(Path(p).parts)
                       for p in patterns), f"{relative} is not in {method.name}'s package-data"
