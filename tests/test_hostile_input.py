"""Hostile input, property-based (hypothesis): malformed wire frames, hostile pipeline YAML and
tampered bundles each get an error naming the field, file or node, never a crash, and no
allocation proportional to a size the peer merely declared."""
import tracemalloc

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgert.runtime.pipeline import Pipeline
from edgert.runtime.spec import PipelineError
from edgert.streams import Chunk, StreamInfo, wire

GOOD = wire.encode(Chunk(np.zeros((4, 2), np.float32), 1.0 + np.arange(4) / 100.0,
                         StreamInfo.make("eeg", 2, rate=100.0)))
HEADER = msgpack.unpackb(GOOD[0])
MB = 1 << 20

sizes = st.one_of(st.integers(0, 8), st.integers(2**20, 2**62), st.integers(-5, -1))
values = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(),
                   st.text(max_size=20), st.binary(max_size=20),
                   st.lists(sizes, max_size=12), st.dictionaries(st.text(max_size=5),
                                                                 st.integers(-9, 9), max_size=3))


@st.composite
def mutated(draw) -> list[bytes]:
    """A good message with some header fields replaced, dropped or added, and a payload cut,
    grown or replaced."""
    stream = dict(HEADER["stream"])
    header = dict(HEADER, stream=stream)
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from([header, stream]))
        key = draw(st.sampled_from(sorted(where) + ["timestamps", "t0", "rate", "trace", "x"]))
        if draw(st.booleans()):
            where.pop(key, None)
        else:
            where[key] = draw(st.one_of(values, st.just([draw(sizes) for _ in range(2)])))
    if draw(st.booleans()):
        header["shape"] = draw(st.lists(sizes, min_size=1, max_size=10))
    if draw(st.booleans()):
        header["dtype"] = draw(st.sampled_from(list(wire.DTYPES) + ["string", "float128",
                                                                    "object"]))
    payload = draw(st.one_of(st.just(bytes(GOOD[1])), st.binary(max_size=256),
                             st.just(msgpack.packb([["a"] * 3] * 2))))
    frames = [msgpack.packb(header, use_bin_type=True), payload]
    return draw(st.sampled_from([frames, frames[:1], frames + [b""]]))


def _decode_within(frames: list[bytes]) -> None:
    """Decode; only a WireError (or the peer's RemoteError) may come out, and peak memory stays
    within a few times what was actually received."""
    tracemalloc.start()
    try:
        wire.decode(frames)
    except (wire.WireError, wire.RemoteError):
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 4 * MB + 16 * sum(len(f) for f in frames), f"{peak} bytes for {frames!r:.200}"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_a_mutated_message_is_rejected_by_field_or_decoded(frames):
    _decode_within(frames)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=512), max_size=4))
def test_arbitrary_bytes_never_crash_the_decoder(frames):
    _decode_within(frames)


@pytest.mark.parametrize("shape,dtype,payload", [
    ([2**40, 0], "float32", b""),
    ([2**40], "string", msgpack.packb(["a"])),
    ([2, 2**40], "float32", b"\0" * 64),
    ([1] * 40, "float32", b"\0" * 4)])
def test_a_huge_declared_shape_is_refused_before_any_allocation(shape, dtype, payload):
    header = dict(HEADER, shape=shape, dtype=dtype)
    header.pop("t0", None)
    header.update(t0=0.0, rate=100.0)
    with pytest.raises(wire.WireError, match="shape|payload"):
        _decode_and_raise([msgpack.packb(header), payload])


def _decode_and_raise(frames):
    tracemalloc.start()
    try:
        wire.decode(frames)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 4 * MB


LAUGHS = """
  - &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]
  - &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
  - &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
  - &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
  - &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
  - &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
  - &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]"""
BOMB = f"name: bomb\nnodes:\n  - name: src\n    node: lsl_inlet\n    params:\n" \
       f"      processing:{LAUGHS.replace(chr(10), chr(10) + '    ')}\n      name: *g\n"


@pytest.mark.parametrize("text,expect", [
    (BOMB, "src"),
    ("name: loop\nnodes: &n [*n]\n", "node '#1'"),
    ("name: x\nnodes:\n  - {name: a, node: os:system}\n", "node 'a'"),
    ("name: x\nnodes:\n  - {name: a, node: lsl_inlet, params: {max_chunk: 1e400}}\n",
     "max_chunk"),
    ("name: x\nnodes:\n  - {name: a, node: lsl_inlet, params: {wait: -1}}\n", "wait"),
    ("name: x\nnodes: 7\n", "nodes"),
    ("- [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     "pipeline"),
    ("name: x\nnodes:\n  - !!python/object/apply:os.system [echo]\n", "YAML"),
])
def test_hostile_pipeline_yaml_gets_an_error_naming_where(tmp_path, text, expect):
    path = tmp_path / "hostile.yaml"
    path.write_text(text)
    tracemalloc.start()
    try:
        with pytest.raises(PipelineError) as error:
            Pipeline.from_yaml(path)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert str(path) in str(error.value) and expect in str(error.value), str(error.value)
    assert len(str(error.value)) < 2000, "the error quotes the bomb"
    assert peak < 64 * MB


def test_a_pipeline_naming_a_module_without_that_node_runs_none_of_its_code(tmp_path,
                                                                          monkeypatch):
    """`node: module:Class` imports the module only once its source, read unrun, defines the
    class; a module with side effects at import is refused before they happen."""
    marker = tmp_path / "ran"
    (tmp_path / "side_effects.py").write_text(f"open({str(marker)!r}, 'w').close()\n"
                                              "def Thing():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nnodes:\n  - {name: a, node: side_effects:Thing}\n")
    with pytest.raises(PipelineError, match="node 'a'.*was not imported"):
        Pipeline.from_yaml(path)
    assert not marker.exists(), "the module's code ran"
