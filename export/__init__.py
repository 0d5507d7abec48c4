"""Model bundles: torch -> ONNX (-> TensorRT), quantized variants, parity checks, manifest."""
