"""BOLT: a small robot VQA student distilled on the teacher's option-level decisions, and a
calibrated, budget-aware router that buys extra test-time work only when it pays.

The scorer (model.py) ranks a question's options by the likelihood of their answer words;
the teacher (9x the parameters) and the students are trained here on a procedural robot
tabletop (scene.py, questions.py, data.py); the "pretrained" teacher is a model of this repo,
trained on a broader, shifted question mix. train.py distils the student (ODD) and fits
temperatures; actions.py, router.py and policy.py are the test-time part; node.py serves it
over ZeroMQ. data.py also reads Robo2VLM-1's parquet rows: `edgert train|evaluate bolt --data
FILE.parquet` trains and tests on them.
"""
from edgert.runtime.plugin import Method, lazy

METHOD = Method(name="bolt", kind="stream", train=lazy("edgert.methods.bolt.train:train"),
                export=lazy("edgert.methods.bolt.export:export"),
                evaluate=lazy("edgert.methods.bolt.evaluate:evaluate"),
                figures=lazy("edgert.methods.bolt.figures:figures"), pipeline="robot",
                sources=lazy("edgert.methods.bolt.demo:sources"),
                demos={"robot": lazy("edgert.methods.bolt.demo:robot")},
                formats=("robo2vlm",))
