"""torch: eager on the CPU; on CUDA in fp16 with CUDA graphs (the GPU path where neither
ONNX Runtime GPU nor TensorRT is installed)."""
from __future__ import annotations

import numpy as np
import torch

from edgert.export.bundle import Bundle, BundleError
from edgert.export.torch_file import load
from edgert.runtime.backends.base import Backend


def load_module(bundle: Bundle) -> torch.nn.Module:
    """The bundle's torch file: a torch.export program (.pt2) or TorchScript (.ts)."""
    if not bundle.manifest.torch_file:
        raise BundleError(f"{bundle.path}: no torch file in the manifest; export it again to "
                          "run it with the torch backend")
    return load(bundle.file(bundle.manifest.torch_file))


class TorchBackend(Backend):
    name = "torch"

    def __init__(self, bundle: Bundle, device: str = "cpu", threads: int | None = None,
                 fp16: bool | None = None, cuda_graphs: bool | None = None):
        super().__init__(bundle, "torch")
        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch-cuda backend: torch sees no CUDA device here; use torch "
                               "(CPU) or run on a GPU machine")
        if threads and device == "cpu":
            torch.set_num_threads(threads)
        self.device = torch.device(device)
        self.fp16 = device == "cuda" if fp16 is None else fp16
        self.cuda_graphs = device == "cuda" if cuda_graphs is None else cuda_graphs
        module = load_module(bundle).to(self.device)
        self.module = module.half() if self.fp16 else module
        self.names = [s.name for s in bundle.manifest.inputs]
        self.outputs = [s.name for s in bundle.manifest.outputs]
        self.graphs: dict[tuple, tuple] = {}
        self.provider = f"torch-{device}" + ("-fp16" if self.fp16 else "")

    def _tensors(self, inputs: dict[str, np.ndarray]) -> list[torch.Tensor]:
        tensors = [torch.from_numpy(np.ascontiguousarray(inputs[n])).to(self.device)
                   for n in self.names]
        return [t.half() if self.fp16 and t.is_floating_point() else t for t in tensors]

    def _outputs(self, result) -> dict[str, np.ndarray]:
        results = result if isinstance(result, (tuple, list)) else (result,)
        return {name: r.float().cpu().numpy() if r.is_floating_point() else r.cpu().numpy()
                for name, r in zip(self.outputs, results)}

    @torch.inference_mode()
    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        tensors = self._tensors(inputs)
        if not self.cuda_graphs:
            return self._outputs(self.module(*tensors))
        key = tuple(t.shape for t in tensors)
        if key not in self.graphs:
            self.graphs[key] = self._capture(tensors)
        graph, static_in, static_out = self.graphs[key]
        for dst, src in zip(static_in, tensors):
            dst.copy_(src)
        graph.replay()
        return self._outputs(static_out)

    def _capture(self, tensors: list[torch.Tensor]) -> tuple:
        """One CUDA graph per input shape: launches become a single replay."""
        static_in = [t.clone() for t in tensors]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                self.module(*static_in)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self.module(*static_in)
        return graph, static_in, static_out
