"""tutor_pupil: a fixed Pupil (a textbook formula or a simple classifier) and a Tutor network
that corrects the Pupil's inputs as little as it can, against a residual model and a black
box; the Tutor's corrections are read back as physics (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.tutor_pupil.job"
METHOD = Method(name="tutor_pupil", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"))
