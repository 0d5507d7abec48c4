"""The bundle's torch model: model.pt2 (torch.export), or TorchScript model.ts where torch.export
cannot capture the module. Either is checked against the module before it is kept."""
from __future__ import annotations

import io
import json
import logging
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr
from pathlib import Path

import torch

from edgert.export.axes import Axes, resized
from edgert.export.bundle import BundleError

log = logging.getLogger(__name__)

PT2 = "model.pt2"
TORCHSCRIPT = "model.ts"

Check = Callable[[Callable, str], None]  # (loaded model, file name) -> raise if it is wrong


def save_torch(module: torch.nn.Module, examples: dict[str, torch.Tensor], dynamic_axes: Axes,
               trace_sizes: dict[str, int], folder: Path, check: Check) -> str:
    """Write the torch file and return its name. `trace_sizes` should avoid sizes of 1, which
    torch.export specializes."""
    try:
        _export(module, examples, dynamic_axes, trace_sizes, folder / PT2)
        check(load(folder / PT2), PT2)
        return PT2
    except Exception as e:  # torch.export fails in many ways; every one means: fall back
        log.info("torch.export could not capture the module (%s: %s); saving TorchScript "
                    "%s instead", type(e).__name__, str(e).strip().split("\n")[0], TORCHSCRIPT)
        (folder / PT2).unlink(missing_ok=True)
    with torch.no_grad(), warnings.catch_warnings():  # deprecated, but the only fallback left
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.trace(module, tuple(examples.values())).save(str(folder / TORCHSCRIPT))
    check(load(folder / TORCHSCRIPT), TORCHSCRIPT)
    return TORCHSCRIPT


def _export(module: torch.nn.Module, examples: dict[str, torch.Tensor], dynamic_axes: Axes,
            trace_sizes: dict[str, int], path: Path) -> None:
    # DYNAMIC lets torch.export narrow a dim's range (a conv needs time >= kernel) but fails
    # when the module would fix the dim to one size.
    shapes = tuple({axis: torch.export.Dim.DYNAMIC for axis in dynamic_axes.get(key, {})}
                   or None for key in examples)
    args = tuple(resized(examples, dynamic_axes, trace_sizes).values())
    with _quiet():
        program = torch.export.export(module, args, dynamic_shapes=shapes)
    torch.export.save(program, str(path))


def load(path: Path) -> Callable:
    """A torch file as a callable taking the inputs positionally, like the original module."""
    if path.suffix == ".pt2":
        refuse_pickles(path)
        return torch.export.load(str(path)).module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.load(str(path))


def refuse_pickles(path: Path) -> None:
    """Refuse a .pt2 archive whose loading would run a pickle's code. torch.export.load
    unpickles pickled weights and constants, sample inputs and legacy `.pt` members with
    `weights_only=False` once `weights_only=True` fails, and custom and opaque objects with no
    check at all. So every pickled member must load with weights only, and custom and opaque
    objects (edgert exports none) are refused, before torch reads the archive."""
    try:
        with zipfile.ZipFile(path) as archive:
            raw = _raw_payloads(archive)
            for member in archive.namelist():
                folder, _, name = member.rpartition("/")
                if name.startswith(("custom_obj_", "opaque_obj_")):
                    raise BundleError(f"{path}: {member} is a pickled Python object, which a "
                                      "bundle never holds; refused unread")
                pickled = member.endswith(".pt") or (
                    folder.endswith(PICKLED_DIRS) and not name.endswith(".json")
                    and member not in raw)
                if pickled:
                    _weights_only(archive, member, path)
    except zipfile.BadZipFile as e:
        raise BundleError(f"{path}: not a torch.export archive ({e})") from None


PICKLED_DIRS = ("data/weights", "data/constants", "data/sample_inputs")


def _raw_payloads(archive: zipfile.ZipFile) -> set[str]:
    """The members the archive's payload configs declare as raw tensor bytes (no pickle)."""
    raw = set()
    for member in archive.namelist():
        if member.endswith(("_weights_config.json", "_constants_config.json")):
            folder = member.rpartition("/")[0]
            try:
                config = json.loads(archive.read(member))["config"]
                raw |= {f"{folder}/{entry['path_name']}" for entry in config.values()
                        if not entry.get("use_pickle")}
            except (ValueError, KeyError, TypeError, AttributeError):
                raise BundleError(f"{member}: not a payload config") from None
    return raw


def _weights_only(archive: zipfile.ZipFile, member: str, path: Path) -> None:
    try:
        torch.load(io.BytesIO(archive.read(member)), map_location="cpu", weights_only=True)
    except Exception as e:  # torch.load fails in many ways on what is not a tensor file
        reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise BundleError(f"{path}: {member} holds more than tensors ({reason}); refused "
                          "unrun") from None


@contextmanager
def _quiet() -> Iterator[None]:
    """torch.export prints whole graphs to stderr when a capture fails: keep them for the debug
    log (the cause is logged as a warning by the caller)."""
    printed = io.StringIO()
    shapes = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = shapes.level
    shapes.setLevel(logging.ERROR)
    try:
        with redirect_stderr(printed):
            yield
    finally:
        shapes.setLevel(level)
        if printed.getvalue():
            log.debug("torch.export printed:\n%s", printed.getvalue())
