"""A stand-alone LSL amplifier for tests: sample i holds the value `start + i` on every channel.

Run as a child process: python lsl_source.py NAME CHANNELS RATE START [SECONDS] [CHUNK]
"""
import sys
import time

import numpy as np
import pylsl


def main() -> None:
    name, channels, rate, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 3600.0
    chunk = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    info = pylsl.StreamInfo(name, "EEG", channels, rate, pylsl.cf_float32, f"{name}-source")
    outlet = pylsl.StreamOutlet(info)
    print("ready", flush=True)
    t0 = pylsl.local_clock()
    i = 0
    while i < seconds * rate:
        due = t0 + (i + chunk - 1) / rate
        time.sleep(max(0.0, due - pylsl.local_clock()))
        values = np.repeat(np.arange(start + i, start + i + chunk, dtype=np.float32)[:, None],
                           channels, axis=1)
        stamps = [t0 + (i + k) / rate for k in range(chunk)]
        outlet.push_chunk(values, stamps if chunk > 1 else stamps[0])
        i += chunk


if __name__ == "__main__":
    main()
