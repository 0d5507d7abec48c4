"""convex_coding: normative neural codes solved as convex programs in the representational
similarity Q = Z^T Z (linear and non-negative codes), against gradient descent on activities,
with identifiability of tunings and modular vs mixed codes as source geometry changes (a batch
job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.convex_coding.job"
METHOD = Method(name="convex_coding", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                extra="batch", requires=("cvxpy",))
