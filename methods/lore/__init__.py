"""lore: Low-Rank Ordinal Embedding, learning a perceptual space AND its dimension from noisy
"i is closer to j than to k" triplets (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.lore.job"
METHOD = Method(name="lore", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"))
