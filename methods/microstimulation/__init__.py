"""microstimulation: model-guided microstimulation of a topographic network's category
patches, with sites mapped onto a second, independently trained network that stands in for
the animal (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.microstimulation.job"
METHOD = Method(name="microstimulation", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"))
