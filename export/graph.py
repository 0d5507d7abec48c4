"""Reading ONNX files: the opset they declare and their input/output specs."""
from __future__ import annotations

from pathlib import Path

import onnx

from edgert.export.bundle import BundleError, TensorSpec


def check_opset(model: onnx.ModelProto, declared: int, path: Path) -> int:
    """The default-domain opset of `model`; raise unless it is the declared one."""
    found = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if found != [declared]:
        raise BundleError(f"{path}: opset {found} but the bundle declares {declared}; the "
                          "exporter or a converter did not keep the opset: export again with "
                          "another opset or torch version")
    return declared


def dim_name(dim) -> int | str:
    """A dim's size, its symbolic name, or "?" where the graph leaves it unnamed."""
    if dim.HasField("dim_value"):
        return dim.dim_value
    return dim.dim_param if dim.HasField("dim_param") else "?"


def specs(values, names: list[str]) -> list[TensorSpec]:
    """TensorSpecs of graph inputs/outputs in `names` order (initializers are left out)."""
    by_name = {v.name: v for v in values}
    result = []
    for name in names:
        tensor = by_name[name].type.tensor_type
        shape = [dim_name(d) for d in tensor.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
        result.append(TensorSpec(name=name, shape=shape, dtype=dtype))
    return result
