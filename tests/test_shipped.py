"""The bundles that ship inside the package: intact, made by this repo's own commands (the
manifest says which, with the seed and code version), used by a fresh machine's demos, and
made again the same way by a quick retrain (slow)."""
import json
import subprocess

import numpy as np
import pytest

from edgert.export.bundle import Bundle
from edgert.export.parity import ort_runner, ort_session, random_samples
from edgert.methods.cache import shipped_bundle, status
from edgert.methods.ship import ship

METHODS = ("btta_dg", "bolt", "cogmoe", "avde", "janusvln")


@pytest.mark.parametrize("method", METHODS)
def test_a_shipped_bundle_verifies_and_says_how_it_was_made(method):
    path = shipped_bundle(method)
    assert path is not None, f"python -m edgert.methods.ship {method} makes it"
    result = subprocess.run(["edgert", "verify", str(path)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    made = Bundle.load(path).manifest.provenance
    assert made.command.startswith(f"edgert train {method} --quick") and made.seed == 0
    assert made.code_version and made.sources == f"methods/{method}"
    assert '"sources_match": true' in result.stdout, \
        f"methods/{method} changed since its bundle shipped: python -m edgert.methods.ship {method}"


def test_a_fresh_machine_uses_the_shipped_bundles(edgert_cache):
    for method in METHODS:
        assert status(method).startswith("the shipped bundle"), method
    assert (shipped_bundle("bolt").parent / "router.json").exists(), "BOLT's router ships too"


def outputs(bundle: Bundle, samples: list[dict]) -> list[np.ndarray]:
    run = ort_runner(ort_session(bundle.model_path()))
    return [next(iter(run(x).values())) for x in samples]


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_a_quick_retrain_makes_the_shipped_bundle_again(method, tmp_path, edgert_cache):
    """Same inputs and outputs, shapes included, and the same predictions on seeded inputs
    for at least 90 % of them (training is seeded; the band allows for a BLAS that sums in
    another order)."""
    shipped = Bundle.load(shipped_bundle(method))
    again = Bundle.load(ship(method, tmp_path / method))
    assert again.manifest.inputs == shipped.manifest.inputs
    assert again.manifest.outputs == shipped.manifest.outputs
    samples = random_samples(shipped.manifest.inputs, shipped.manifest.example_dims, n=8)
    ours, theirs = outputs(again, samples), outputs(shipped, samples)
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape
    agree = np.mean(np.concatenate([(a.argmax(-1) == b.argmax(-1)).ravel()
                                    for a, b in zip(ours, theirs)]))
    assert agree >= 0.9, json.dumps({"method": method, "agreement": float(agree)})


def test_the_shipped_decoder_reads_trials_filtered_as_bci_yaml_filters_them():
    """Train/serve skew guard: trials cut from continuous EEG band-passed by the filter that
    `pipelines/bci.yaml` runs, aligned as its `align` node does, decoded well above chance
    (a decoder trained on unfiltered trials scored 0.33 here)."""
    from scipy import signal

    from edgert import pipelines
    from edgert.methods.btta_dg import synth
    from edgert.methods.btta_dg.align import IncrementalAlignment
    from edgert.methods.btta_dg.demo import REST_S, USER
    from edgert.methods.btta_dg.train import EPOCH
    from edgert.runtime.spec import load

    band = load(pipelines.find("bci")).node("bandpass").params
    subject = synth.make_subject(USER)
    data, cues = synth.continuous(subject, synth.make_session(subject, 1), 40, 0, REST_S)
    sos = signal.butter(band["order"], band["freqs"], btype="bandpass", fs=synth.RATE,
                        output="sos")
    zi = signal.sosfilt_zi(sos)[:, :, None] * data[:1]
    filtered = signal.sosfilt(sos, data, axis=0, zi=zi)[0]
    start, stop = (int(s * synth.RATE) for s in EPOCH)
    align = IncrementalAlignment(len(synth.CHANNELS))
    trials = [align(filtered[c + start:c + stop].T).astype(np.float32) for c, _ in cues]
    [probs] = outputs(Bundle.load(shipped_bundle("btta_dg")), [{"eeg": np.stack(trials)}])
    accuracy = np.mean(probs.mean(1).argmax(1) == [y for _, y in cues])
    assert accuracy > 0.6, accuracy
