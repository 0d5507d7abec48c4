"""The smallest useful pylsl relay, as a user would write it: SOURCE in, TARGET out.

Runs in edgert's own environment (pylsl is a dependency). Usage: python pylsl_relay.py SOURCE TARGET
"""
import sys

import numpy as np
import pylsl


def relay(source: str, target: str) -> None:
    info = pylsl.resolve_byprop("name", source, timeout=10)[0]
    inlet = pylsl.StreamInlet(info, max_buflen=10)
    full = inlet.info()
    out_info = pylsl.StreamInfo(target, full.type(), full.channel_count(),
                                full.nominal_srate(), full.channel_format())
    outlet = pylsl.StreamOutlet(out_info)
    buf = np.empty((1024, full.channel_count()), np.float32)
    while True:
        data, stamps = inlet.pull_chunk(1.0, 1024, dest_obj=buf, min_samples=1, as_numpy=True)
        if len(stamps) == 1:
            outlet.push_chunk(data, float(stamps[0]))
        elif len(stamps):
            outlet.push_chunk(data, stamps.tolist())


if __name__ == "__main__":
    try:
        relay(sys.argv[1], sys.argv[2])
    except KeyboardInterrupt:  # the benchmark stops relays with SIGINT
        pass
