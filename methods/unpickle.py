"""Unpickling that cannot run code, for the datasets whose published format is a pickle
(THINGS-EEG2's .npy dicts, pandas' HDF5 attributes and object columns).

A pickle runs code only through the globals it names; this unpickler resolves none but numpy
arrays, dtypes and slices, so what it returns is built from containers, strings, numbers and
arrays, whatever the file says.
"""
from __future__ import annotations

import io
import pickle
from typing import Any


class ArraysOnly(pickle.Unpickler):
    """Unpickles arrays, containers, strings and numbers; any other global is refused."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
               ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
               ("numpy._core.multiarray", "scalar"), ("builtins", "slice")}

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not an array or a string")
        return super().find_class(module, name)


def arrays_only(data: bytes) -> Any:
    """The object pickled in `data`; UnpicklingError if it names anything but arrays."""
    return ArraysOnly(io.BytesIO(data)).load()
