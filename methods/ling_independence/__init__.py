"""ling_independence: an independence test for linear non-Gaussian data (conditional mean and
variance, both directions, permutation null) against HSIC and KCI, and inside PC (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.ling_independence.job"
METHOD = Method(name="ling_independence", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                extra="batch", requires=("hyppo", "causallearn"))
