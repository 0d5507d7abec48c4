"""fp16 and int8 variants of model.onnx, each measured against fp32 before it is kept.

A smaller file is not a better one: a variant that runs slower than fp32 on the CPU or loses
more accuracy than allowed stays in the bundle (a GPU may still want it) but is flagged in the
manifest and logged, never kept silently.
"""
from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import onnx

from edgert.export import parity
from edgert.export.bundle import Bundle, ExportError, Variant
from edgert.export.graph import check_opset

log = logging.getLogger(__name__)

FP16_TOLERANCE = 1e-2
SLOWER = 1.05  # a ratio above this is measurably slower, not noise
LATENCY_RUNS = 50

Evaluate = Callable[[parity.Run], float]


def make_fp16(src: Path, dst: Path) -> None:
    """Weights and activations in float16; inputs and outputs stay float32 for the caller.

    ONNX Runtime's own converter: onnxconverter-common's leaves a Cast it retypes mismatched
    in graphs with shape arithmetic (a GRU decoder over a dynamic image size), which then
    does not load. Transposes stay float32: ONNX Runtime 1.32's CPU optimizer (MatMul-
    Transpose fusion with the NCHWc transformer) crashes the process on float16 attention
    layers (the CogMoE transformer)."""
    from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(src)), keep_io_types=True,
                                     op_block_list=[*DEFAULT_OP_BLOCK_LIST, "Transpose"])
    onnx.save(model, str(dst))


def make_int8(src: Path, dst: Path) -> None:
    """Dynamic 8-bit quantization: weights stored in 8 bits, activations quantized per run.

    Weights are uint8: ONNX Runtime's CPU ConvInteger long ran only uint8 x uint8
    (microsoft/onnxruntime#6430), and pyproject allows those versions.

    quant_pre_process (shape inference + graph optimization) improves the result but fails on
    some graphs; then the model is quantized as exported, and the log says why. Both log a
    line per tensor on the root logger at INFO: it is held at WARNING while they run.
    """
    from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(max(level, logging.WARNING))
    try:
        with tempfile.TemporaryDirectory(prefix="edgert-int8-") as tmp:
            source = Path(tmp) / "preprocessed.onnx"
            try:
                quant_pre_process(str(src), str(source))
            except Exception as e:  # its failures are of every type; the fallback is valid
                log.warning("quant_pre_process failed on %s (%s: %s); quantizing without it",
                            src, type(e).__name__, e)
                source = src
            quantize_dynamic(str(source), str(dst), weight_type=QuantType.QUInt8)
    finally:
        root.setLevel(level)


MAKERS = {"fp16": make_fp16, "int8": make_int8}


def latency_ratio(fp32: Path, variant: Path, inputs: parity.Inputs,
                  runs: int = LATENCY_RUNS) -> float:
    """Median latency of `variant` over fp32's, one thread each, runs interleaved so that load
    from elsewhere on the machine hits both alike."""
    sessions = [parity.ort_session(p, threads=1) for p in (fp32, variant)]
    times: list[list[float]] = [[], []]
    for i in range(runs + 5):
        for session, spent in zip(sessions, times):
            start = time.perf_counter()
            session.run(None, inputs)
            if i >= 5:
                spent.append(time.perf_counter() - start)
    return statistics.median(times[1]) / statistics.median(times[0])


def add_variants(bundle: Bundle, samples: Sequence[parity.Inputs],
                 expected: Sequence[parity.Outputs], *, fp16: bool, int8: bool,
                 evaluate: Evaluate | None, accuracy_tolerance: float) -> None:
    """Write the asked variants next to model.onnx and record what each costs and gains."""
    fp32 = bundle.manifest.variants["fp32"]
    if evaluate is not None:
        fp32.accuracy = float(evaluate(_runner(bundle.model_path())))
    batch1 = parity.random_inputs(bundle.manifest.inputs,
                                  parity.dim_sets(bundle.manifest.example_dims)[0], seed=0)
    for precision in [p for p, asked in (("fp16", fp16), ("int8", int8)) if asked]:
        file = f"model.{precision}.onnx"
        MAKERS[precision](bundle.model_path(), bundle.file(file))
        variant = _measure(bundle, file, precision, samples, expected, batch1, evaluate)
        variant.flagged = _flags(variant, fp32.accuracy, accuracy_tolerance)
        for flag in variant.flagged:
            log.warning("%s: %s variant kept but flagged: %s", bundle.manifest.name, precision,
                        flag)
        bundle.manifest.variants[precision] = variant


def _runner(path: Path) -> parity.Run:
    return parity.ort_runner(parity.ort_session(path))


def _measure(bundle: Bundle, file: str, precision: str, samples: Sequence[parity.Inputs],
             expected: Sequence[parity.Outputs], batch1: parity.Inputs,
             evaluate: Evaluate | None) -> Variant:
    path = bundle.file(file)
    check_opset(onnx.load(str(path)), bundle.manifest.opset, path)
    try:
        run = _runner(path)
    except Exception as e:  # ORT reports unsupported ops as several exception types
        raise ExportError(f"{bundle.manifest.name}: the {precision} variant {file} does not load "
                          f"in ONNX Runtime ({e}); export without --{precision}") from e
    tolerance = FP16_TOLERANCE if precision == "fp16" else None
    variant = Variant(file=file, precision=precision)
    variant.parity = parity.measure(samples, expected, run, tolerance,
                                    f"{bundle.manifest.name}: {file} against fp32 torch",
                                    f"{precision} is too coarse for this model: export without "
                                    f"--{precision}")
    variant.latency_ratio = latency_ratio(bundle.model_path(), path, batch1)
    if evaluate is not None:
        variant.accuracy = float(evaluate(run))
        variant.accuracy_delta = variant.accuracy - bundle.manifest.variants["fp32"].accuracy
    return variant


def _flags(variant: Variant, fp32_accuracy: float | None, tolerance: float) -> list[str]:
    flags = []
    if variant.latency_ratio is not None and variant.latency_ratio > SLOWER:
        flags.append(f"slower than fp32 ({variant.latency_ratio:.2f}x on the CPU)")
    if variant.accuracy_delta is not None and -variant.accuracy_delta > tolerance:
        flags.append(f"loses {-variant.accuracy_delta:.3f} accuracy ({fp32_accuracy:.3f} -> "
                     f"{variant.accuracy:.3f}), more than the {tolerance:g} allowed")
    return flags
