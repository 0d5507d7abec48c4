"""CogMoE: signal-quality-guided mixture of experts over EEG, ECG, EDA and gaze.

Stage 1 (recovery.py, quality.py) synchronises and repairs each 10-s window of the four
sensors and scores their quality; stage 2 (model.py) is a cross-modal transformer whose
feed-forward blocks are three experts under a gate that sees the quality, trained with the
CORTEX loss (train.py) on simulated drives (simulate.py). The "pretrained" model is trained
here; data.py reads CL-Drive and ADABase in their own layouts.
"""
from methods.base import Method


def _train(out=None, quick: bool = False):
    from methods.cogmoe.train import train

    return train(out, quick)


def _export(out, checkpoint=None, fp16: bool = False, int8: bool = False):
    from methods.cogmoe.export import export

    return export(out, checkpoint, fp16, int8)


def _evaluate(quick: bool = False, out=None) -> dict:
    from methods.cogmoe.evaluate import evaluate

    return evaluate(quick, out)


def _demo(duration, run) -> dict:
    from methods.cogmoe.demo import car

    return car(duration, run)


def _sources(name: str, seconds: float):
    from methods.cogmoe.demo import sources

    return sources(name, seconds)


METHOD = Method(name="cogmoe", kind="stream", train=_train, export=_export,
                evaluate=_evaluate, pipeline="car", demos={"car": _demo},
                sources=_sources)
