"""imagebeagle: finding preferred AND anti-preferred stimuli of a unit with few queries, by
walking a k-nearest-neighbour graph of real photo patches (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.imagebeagle.job"
METHOD = Method(name="imagebeagle", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"))
