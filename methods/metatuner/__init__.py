"""metatuner: one shared encoder of the query feeding a prompt head (a choice among candidate
prompts) and a parameter head (a hypernetwork emitting LoRA weights) for a frozen small LM,
trained jointly with a supervised loss on the best prompt, against prompt-only, LoRA-only
and sequential tuning (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.metatuner.job"
METHOD = Method(name="metatuner", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                figures=lazy("edgert.methods.metatuner.figures:draw"),
                extra="batch", requires=("transformers",))
