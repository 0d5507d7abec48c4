"""llema: evolutionary materials design: a proposer (chemistry rules here, an LM through the
one LM interface) suggests crystals for a task's constraints, a surrogate oracle (CHGNet
energies, a band-gap proxy fitted on measured gaps) scores them, and success and failure
memories steer the next generation (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.llema.job"
METHOD = Method(name="llema", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                figures=lazy("edgert.methods.llema.figures:draw"),
                extra="batch", requires=("pymatgen", "smact", "chgnet"))
