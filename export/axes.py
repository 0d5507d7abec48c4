"""Dynamic dims: their example sizes, resized examples, and which output dims follow them."""
from __future__ import annotations

import torch

from edgert.export import parity
from edgert.export.bundle import ExportError

Axes = dict[str, dict[int, str]]


def example_dims(examples: dict[str, torch.Tensor], dynamic_axes: Axes,
                 output_names: list[str]) -> dict[str, int]:
    """Each dynamic dim's size in the examples; one name must mean one size."""
    dims: dict[str, int] = {}
    for key, axes in dynamic_axes.items():
        if key not in examples:
            if key not in output_names:
                raise ExportError(f"dynamic_axes names {key!r}, which is neither an input "
                                  f"{list(examples)} nor an output {output_names}")
            continue
        for axis, dim in axes.items():
            size = examples[key].shape[axis]
            if dims.setdefault(dim, size) != size:
                raise ExportError(f"dynamic dim {dim!r} is {dims[dim]} in one input and {size} "
                                  f"in {key!r}; give examples where a shared dim has one size")
    return dims


def resized(examples: dict[str, torch.Tensor], dynamic_axes: Axes,
            sizes: dict[str, int]) -> dict[str, torch.Tensor]:
    """The examples with dynamic dims tiled to `sizes` (values stay valid, e.g. token ids)."""
    result = {}
    for key, x in examples.items():
        for axis, dim in dynamic_axes.get(key, {}).items():
            x = x.index_select(axis, torch.arange(sizes[dim]) % x.shape[axis])
        result[key] = x
    return result


def other_sizes(dims: dict[str, int]) -> dict[str, int]:
    """For each dynamic dim, a checked size different from the example's."""
    sets = parity.dim_sets(dims)
    return {d: next((s[d] for s in sets if s[d] != n), n + 1) for d, n in dims.items()}


def output_axes(module: torch.nn.Module, examples: dict[str, torch.Tensor],
                dynamic_axes: Axes, dims: dict[str, int], output_names: list[str]) -> Axes:
    """Name the output dims that change with a dynamic input dim: with the input's name where
    they equal it, else a name of their own (one name means one size to ONNX and TensorRT)."""
    with torch.no_grad():
        base = [t.shape for t in parity.flatten(module(*examples.values()))]
    found: Axes = {}
    for dim, other in other_sizes(dims).items():
        sizes = {**dims, dim: other}
        with torch.no_grad():
            moved = parity.flatten(module(*resized(examples, dynamic_axes, sizes).values()))
        for out, before, after in zip(output_names, base, moved):
            for i, (b, a) in enumerate(zip(before, after.shape)):
                if b != a and i not in found.get(out, {}):
                    same = (b, a) == (dims[dim], other)
                    found.setdefault(out, {})[i] = dim if same else f"{out}_dim{i}"
    return found
