"""r3bench: social scenarios whose questions form a causal chain (desire -> belief -> intent
-> emotion), scored per question and per chain, and a small policy trained with supervised
fine-tuning and then GRPO on chain-consistency rewards (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.r3bench.job"
METHOD = Method(name="r3bench", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                extra="batch", requires=("transformers", "trl", "peft", "datasets"))
