"""ei_snn: deep spiking networks without normalization, each layer a circuit of excitatory
and inhibitory LIF units under Dale's law, trained with E-I Init and E-I Prop, against plain
and BatchNorm spiking networks as depth grows (a batch job)."""
from edgert.runtime.plugin import Method, lazy

JOB = "edgert.methods.ei_snn.job"
METHOD = Method(name="ei_snn", kind="batch", run=lazy(f"{JOB}:run"),
                grid=lazy(f"{JOB}:grid"), config=lazy(f"{JOB}:Config"),
                figures=lazy("edgert.methods.ei_snn.figures:overview"),
                extra="batch", requires=("snntorch",))
