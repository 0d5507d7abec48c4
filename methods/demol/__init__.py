"""demol: molecular property prediction from dual atom-centric and bond-centric graphs fused
by multi-scale Double-Helix blocks, with a covalent-radius regulariser on 3-D geometry, against
an atom-only GNN of equal size and its own ablations (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.demol.job"
METHOD = Method(name="demol", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                extra="batch", requires=("rdkit", "torch_geometric", "tblite"))
