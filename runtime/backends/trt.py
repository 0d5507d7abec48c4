"""Native TensorRT: a cached engine from the bundle, run with torch CUDA tensors as buffers.

TensorRT is imported lazily; where it is missing, the error says how to get it.
"""
from __future__ import annotations

import numpy as np

from edgert.export.bundle import Bundle
from edgert.runtime.backends.base import Backend


class TensorRTBackend(Backend):
    name = "trt"

    def __init__(self, bundle: Bundle, variant: str = "fp32"):
        super().__init__(bundle, variant)
        import torch

        from edgert.export.tensorrt import engine_for, import_tensorrt

        trt = import_tensorrt()
        if not torch.cuda.is_available():
            raise RuntimeError("trt backend: no CUDA device visible to torch")
        self.torch = torch
        plan = engine_for(bundle, precision="fp16" if variant == "fp16" else "fp32", build=True)
        runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
        self.engine = runtime.deserialize_cuda_engine(plan.read_bytes())
        self.context = self.engine.create_execution_context()
        self.stream = torch.cuda.Stream()
        names = [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]
        self.outputs = [n for n in names
                        if self.engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        self.dtypes = {n: np.dtype(trt.nptype(self.engine.get_tensor_dtype(n))) for n in names}
        self.provider = "TensorRT"

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        torch = self.torch
        keep = []
        for name, value in inputs.items():
            tensor = torch.from_numpy(np.ascontiguousarray(value, self.dtypes[name])).cuda()
            keep.append(tensor)
            self.context.set_input_shape(name, tuple(value.shape))
            self.context.set_tensor_address(name, tensor.data_ptr())
        out = {}
        for name in self.outputs:
            shape = tuple(self.context.get_tensor_shape(name))
            out[name] = torch.empty(shape, dtype=getattr(torch, self.dtypes[name].name),
                                    device="cuda")
            self.context.set_tensor_address(name, out[name].data_ptr())
        self.context.execute_async_v3(self.stream.cuda_stream)
        self.stream.synchronize()
        return {name: t.cpu().numpy() for name, t in out.items()}
