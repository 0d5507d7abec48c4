"""ZeroMQ CURVE: an endpoint off this machine needs keys or an explicit flag; a server lets in
only the clients whose public keys it lists, refuses and counts the others; `edgert keys`."""
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from edgert.runtime.pipeline import Pipeline
from edgert.runtime.spec import PipelineError
from edgert.streams import Chunk, StreamInfo, local_clock
from edgert.streams.zmq_link import Puller, Pusher, free_endpoint, listening
from edgert.streams.zmq_security import Security, exposed, make_keys


@pytest.fixture
def keys(tmp_path):
    """Server and client pairs from `edgert keys`; the server lists the client's public key,
    not the stranger's."""
    for name in ("server", "client", "stranger"):
        done = subprocess.run(["edgert", "keys", str(tmp_path / "keys"), "--name", name],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "client.key").write_bytes((tmp_path / "keys" / "client.key").read_bytes())
    return tmp_path / "keys", allowed


def _chunk(seq: int) -> Chunk:
    return Chunk(np.full((2, 3), seq, np.float32), local_clock() + np.zeros(2),
                 StreamInfo.make("secret-eeg", 3), seq)


def test_endpoints_off_this_machine_say_what_they_need():
    assert exposed("tcp://*:5555") and exposed("tcp://0.0.0.0:5555")
    assert exposed("tcp://10.1.2.3:5555") and exposed("tcp://robot.local:5555")
    assert not exposed("tcp://127.0.0.1:5555") and not exposed("tcp://localhost:1")
    assert not exposed("ipc:///tmp/x") and not exposed("inproc://x")


def test_binding_all_interfaces_without_keys_is_refused_unless_insecure(tmp_path, caplog):
    spec = tmp_path / "open.yaml"
    port = free_endpoint().rpartition(":")[2]
    spec.write_text(f"""name: open
nodes:
  - name: src
    node: zmq_in
    params: {{endpoint: "tcp://*:{port}", pattern: pull}}
  - name: sink
    node: zmq_out
    params: {{endpoint: "{free_endpoint()}", pattern: push}}
""")
    with pytest.raises(PipelineError, match=r"node 'src'.*reachable from other machines.*"
                                            r"edgert keys.*insecure: true"):
        Pipeline.from_yaml(spec).start()
    pipe = Pipeline.from_yaml(spec, ["src.insecure=true"])
    pipe.start()
    pipe.stop()
    assert "sends in the clear" in caplog.text


def test_curve_lets_in_listed_clients_and_refuses_and_counts_the_rest(keys):
    folder, allowed = keys
    server = Security(folder / "server.key_secret", clients=allowed)
    with Puller("tcp://0.0.0.0:0", security=server) as puller:
        endpoint = "tcp://127.0.0.1:" + puller.endpoint.rpartition(":")[2]
        client = Security(folder / "client.key_secret", server_key=folder / "server.key")
        stranger = Security(folder / "stranger.key_secret", server_key=folder / "server.key")
        with Pusher(endpoint, security=client) as good, \
                Pusher(endpoint, security=stranger), Pusher(endpoint):
            for k in range(3):
                good.push(_chunk(k), timeout=5)
            got = [puller.pull(timeout=5) for _ in range(3)]
            assert [c.seq for c in got] == [0, 1, 2]
            deadline = time.monotonic() + 10
            while puller.refused < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert puller.pull(timeout=0.5) is None, "no chunk from an unlisted peer"
            assert puller.refused >= 2, "the stranger and the plain peer were refused"


@pytest.mark.parametrize("case,expect", [
    ("no clients", "needs clients"), ("no server key", "needs server_key"),
    ("public only", "holds no secret key"), ("not a key", "not a ZeroMQ certificate")])
def test_a_curve_setup_that_cannot_work_names_the_field(keys, tmp_path, case, expect):
    folder, allowed = keys
    (tmp_path / "junk").write_text("not a key")
    security, bind = {
        "no clients": (Security(folder / "server.key_secret"), True),
        "no server key": (Security(folder / "client.key_secret"), False),
        "public only": (Security(folder / "client.key"), False),
        "not a key": (Security(tmp_path / "junk"), True)}[case]
    with pytest.raises(ValueError, match=expect):
        (Puller if bind else Pusher)(free_endpoint(), bind=bind, security=security)


def test_make_keys_keeps_the_secret_private(tmp_path):
    public, secret = make_keys(tmp_path, "me")
    assert public.exists() and secret.stat().st_mode & 0o077 == 0


def test_a_secured_run_writes_its_report_and_strangers_lock_out_no_listed_client(keys, tmp_path):
    """`edgert run` with a CURVE server: unlisted peers (a stranger's key, and none) connect
    and send first; the listed client connecting after them gets every chunk through, and the
    run ends with exit 0 and its report, refusals counted."""
    folder, allowed = keys
    port = free_endpoint().rpartition(":")[2]
    out = free_endpoint()
    spec = tmp_path / "secured.yaml"
    spec.write_text(f"""name: secured
nodes:
  - name: src
    node: zmq_in
    params: {{endpoint: "tcp://0.0.0.0:{port}", pattern: pull,
              keys: "{folder / 'server.key_secret'}", clients: "{allowed}"}}
  - name: dst
    node: zmq_out
    params: {{endpoint: "{out}", pattern: push}}
""")
    report = tmp_path / "report.json"
    run = subprocess.Popen([sys.executable, "-m", "edgert.cli", "run", str(spec),
                            "--duration", "7", "--report", str(report), "--quiet"],
                           stderr=subprocess.PIPE, text=True)
    endpoint = f"tcp://127.0.0.1:{port}"
    stranger = Security(folder / "stranger.key_secret", server_key=folder / "server.key")
    client = Security(folder / "client.key_secret", server_key=folder / "server.key")
    with Puller(out) as results:
        assert listening(endpoint, 60), "the pipeline never listened"
        with Pusher(endpoint, security=stranger) as s1, Pusher(endpoint) as s2:
            for k in range(5):
                for s in (s1, s2):
                    try:
                        s.push(_chunk(100 + k), timeout=0.05)
                    except TimeoutError:
                        pass
            time.sleep(0.5)
            with Pusher(endpoint, security=client) as good:
                for k in range(20):
                    good.push(_chunk(k), timeout=5)
                got = [results.pull(timeout=10) for _ in range(20)]
    _, err = run.communicate(timeout=60)
    assert [c.seq for c in got if c is not None] == list(range(20)), err
    assert run.returncode == 0, err
    saved = json.loads(report.read_text())
    assert saved["nodes"]["src"]["refused"] >= 2 and saved["nodes"]["src"]["processed"] == 20


def test_strangers_on_a_curve_subscriber_lock_out_no_listed_publisher(keys):
    """A pipeline's SUB binds with CURVE; a stranger's key and a plain peer publish first, then
    the listed client: its chunks arrive. (A publisher that connects to a bound SUB may lose
    what it sends before the subscription reaches it: libzmq forwards it on the first send.)"""
    from edgert.runtime import spec as specs
    from edgert.streams.zmq_link import Publisher

    folder, allowed = keys
    port, out = free_endpoint().rpartition(":")[2], free_endpoint()
    raw = {"name": "s", "nodes": [
        {"name": "src", "node": "zmq_in", "params": {
            "endpoint": f"tcp://0.0.0.0:{port}", "pattern": "sub", "bind": True,
            "keys": str(folder / "server.key_secret"), "clients": str(allowed)}},
        {"name": "dst", "node": "zmq_out", "params": {"endpoint": out, "pattern": "push"}}]}
    pipe = Pipeline(specs.parse(raw, "secured-sub"))
    endpoint = f"tcp://127.0.0.1:{port}"
    with Puller(out) as results:
        pipe.start()
        try:
            stranger = Security(folder / "stranger.key_secret", server_key=folder / "server.key")
            strangers = [Publisher(endpoint, bind=False, security=stranger),
                         Publisher(endpoint, bind=False)]
            for s in strangers:
                for k in range(5):
                    s.push(_chunk(100 + k))
            time.sleep(0.5)
            client = Security(folder / "client.key_secret", server_key=folder / "server.key")
            with Publisher(endpoint, bind=False, security=client) as good:
                time.sleep(0.5)
                for k in range(20):
                    good.push(_chunk(k))
                    time.sleep(0.01)
                got = []
                while (c := results.pull(timeout=2)) is not None:
                    got.append(c.seq)
            for s in strangers:
                s.close()
        finally:
            pipe.stop()
    assert all(0 <= s < 20 for s in got) and len(got) >= 19, got
    assert pipe.report()["nodes"]["src"]["refused"] >= 2
