"""MNE-LSL's StreamLSL as a relay: every new sample of SOURCE goes out on a pylsl outlet TARGET.

Runs inside benchmarks/.peers/mne_lsl (made by benchmarks/setup_peers.sh), not in edgert's
environment. Usage: python mne_lsl_relay.py SOURCE TARGET

Acquisition is manual (connect(acquisition_delay=None), then acquire()), the mode MNE-LSL's
"Automatic vs Manual acquisition" tutorial describes: reading n_new_samples and then get_data
while the automatic acquisition thread runs is a race that loses samples. The loop polls
every DELAY s, MNE-LSL's default acquisition delay.
"""
import sys
import time

import pylsl
from mne_lsl.stream import StreamLSL

DELAY = 0.001
BUFSIZE = 10.0


def outlet_like(stream: StreamLSL, name: str) -> pylsl.StreamOutlet:
    info = pylsl.StreamInfo(name, "EEG", len(stream.ch_names), stream.info["sfreq"],
                            "float32", f"{name}-mne-lsl")
    return pylsl.StreamOutlet(info)


def relay(source: str, target: str) -> None:
    stream = StreamLSL(BUFSIZE, name=source).connect(acquisition_delay=None, timeout=10)
    outlet = outlet_like(stream, target)
    sfreq = stream.info["sfreq"]
    while True:
        stream.acquire()
        n = stream.n_new_samples
        if n == 0:
            time.sleep(DELAY)
            continue
        data, stamps = stream.get_data(winsize=n / sfreq)
        # get_data rounds winsize * sfreq up: keep exactly the n new samples
        outlet.push_chunk(data[:, -n:].T.copy(), stamps[-n:].tolist())


if __name__ == "__main__":
    try:
        relay(sys.argv[1], sys.argv[2])
    except KeyboardInterrupt:  # the benchmark stops relays with SIGINT
        pass
