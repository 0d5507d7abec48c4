"""sigmadock: docking as SE(3) diffusion of rigid ligand fragments (cut at rotatable bonds)
in the pocket, with an e3nn score network and bond closure at the cuts, against atom-level
diffusion of equal size and AutoDock Vina, judged by PoseBusters (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.sigmadock.job"
METHOD = Method(name="sigmadock", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                extra="batch", requires=("rdkit", "e3nn", "posebusters"))
