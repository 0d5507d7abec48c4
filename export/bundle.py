"""A bundle is a folder: model.onnx (+ variants), model.pt2 for torch, and manifest.json.

The manifest says what goes in and out (names, shapes with symbolic dims, dtypes), how to
preprocess, the labels, the versions that built it, the parity error measured at export and
the sha256 of every file, so a copied or tampered bundle is caught before it runs.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MANIFEST = "manifest.json"


class BundleError(ValueError):
    """A bundle that cannot be used as it is; the message names the bundle and the file."""


class ExportError(RuntimeError):
    """An export that cannot produce a trustworthy bundle; nothing is written at `out`."""


class TensorSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    shape: list[int | str] = Field(description="ints, or names for dynamic dims ('batch')")
    dtype: str = Field(description="numpy dtype name: float32, int64, ...")


class Parity(BaseModel):
    """ONNX Runtime against torch on the same inputs."""

    model_config = ConfigDict(extra="forbid")

    max_abs: float
    max_rel: float
    samples: int
    tolerance: float | None = Field(description="enforced bound; None: measured, not enforced")


class Variant(BaseModel):
    """One ONNX file of the bundle: fp32, fp16 or int8, with what it costs and gains."""

    model_config = ConfigDict(extra="forbid")

    file: str
    precision: str
    parity: Parity | None = None
    accuracy: float | None = Field(None, description="what `evaluate` returned for this file")
    accuracy_delta: float | None = None
    latency_ratio: float | None = Field(None, description="variant / fp32 latency on the CPU")
    flagged: list[str] = []


class Provenance(BaseModel):
    """How a bundle that ships inside the package was made, so anyone can make it again."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="the command that trained and exported it")
    seed: int
    code_version: str = Field(description="edgert version and git commit")
    sources: str = Field(description="the method's folder, relative to the edgert package")
    sources_sha256: str = Field(description="sources_sha256 of that folder at the time")


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    format_version: int = 1
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    opset: int
    variants: dict[str, Variant]
    torch_file: str | None = None
    preprocessing: dict = {}
    labels: list[str] = []
    example_dims: dict[str, int] = Field({}, description="dynamic dim -> size in the export "
                                         "example; sizes for checks and TensorRT profiles")
    parity: dict[str, Parity] = Field({}, description="fp32 parity: 'random' and 'real'")
    versions: dict[str, str] = {}
    checkpoint_sha256: str | None = None
    files: dict[str, str] = Field({}, description="relative path -> sha256")
    engines: dict[str, dict] = Field({}, description="TensorRT engines by cache key")
    provenance: Provenance | None = None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sources_sha256(folder: Path) -> str:
    """One digest of every .py file directly in `folder`, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Bundle:
    """A bundle folder on disk. `Bundle.load` checks every file's hash unless told not to."""

    def __init__(self, path: Path, manifest: Manifest):
        self.path = Path(path)
        self.manifest = manifest

    @classmethod
    def load(cls, path: str | Path, check: bool = True) -> "Bundle":
        path = Path(path)
        file = path / MANIFEST
        if not file.exists():
            raise BundleError(f"{path}: not a bundle (no {MANIFEST}); make one with "
                              "`edgert export`")
        try:
            manifest = Manifest.model_validate_json(file.read_text())
        except ValueError as e:
            raise BundleError(f"{file}: invalid manifest: {e}") from None
        bundle = cls(path, manifest)
        if check:
            bundle.check_hashes()
        return bundle

    def file(self, name: str) -> Path:
        """A file of the bundle; a manifest that names one outside its folder is refused."""
        path = self.path / name
        if Path(name).is_absolute() or not path.resolve().is_relative_to(self.path.resolve()):
            raise BundleError(f"{self.path}: the manifest names {name!r}, outside the bundle's "
                              "folder; a bundle only reads its own files")
        return path

    def model_path(self, variant: str = "fp32") -> Path:
        if variant not in self.manifest.variants:
            raise BundleError(f"{self.path}: no {variant!r} variant; it has "
                              f"{sorted(self.manifest.variants)} (export with --{variant})")
        return self.file(self.manifest.variants[variant].file)

    def check_hashes(self) -> None:
        """Refuse a bundle whose files were changed, removed, or never hashed."""
        for name, expected in self.manifest.files.items():
            path = self.file(name)
            if not path.exists():
                raise BundleError(f"{self.path}: {name} is listed in the manifest but missing")
            actual = sha256(path)
            if actual != expected:
                raise BundleError(f"{self.path}: {name} has sha256 {actual[:16]}..., the "
                                  f"manifest says {expected[:16]}...; the bundle was changed "
                                  "after export: export it again")
        listed = {v.file for v in self.manifest.variants.values()}
        if self.manifest.torch_file:
            listed.add(self.manifest.torch_file)
        unhashed = sorted(listed - set(self.manifest.files))
        if unhashed:
            raise BundleError(f"{self.path}: {unhashed} have no sha256 in the manifest")

    def save_manifest(self) -> None:
        """Hash every model file, and every other file already listed in `files` (what a
        method keeps beside its model), and write manifest.json."""
        names = {v.file for v in self.manifest.variants.values()} | set(self.manifest.files)
        if self.manifest.torch_file:
            names.add(self.manifest.torch_file)
        names |= {e["file"] for e in self.manifest.engines.values() if "file" in e}
        self.manifest.files = {n: sha256(self.file(n)) for n in sorted(names)}
        (self.path / MANIFEST).write_text(json.dumps(self.manifest.model_dump(), indent=2))
