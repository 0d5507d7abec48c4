"""ZeroMQ CURVE for endpoints off this machine: key pairs (`edgert keys`), who may connect, and
the rule that such an endpoint is encrypted and authenticated unless the user says otherwise.

Each end has a key pair, NAME.key (public, to hand out) and NAME.key_secret (kept). The binding
end (the server) lists the public keys of the clients it lets in, one file each in a folder;
a connecting end (a client) needs the server's public key. A peer without a listed key never
completes the handshake: its connection is refused, and counted.
"""
from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

log = logging.getLogger(__name__)

FAILED = (zmq.EVENT_HANDSHAKE_FAILED_AUTH | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
          | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
_auth: ThreadAuthenticator | None = None
_auth_lock = threading.Lock()


def exposed(endpoint: str) -> bool:
    """True unless every address the endpoint can reach or be reached on is this machine's.

    Only `inproc://`, `ipc://` and `tcp://` to loopback stay local; every other transport
    (tipc reaches the cluster, pgm/epgm/norm/udp/ws/vmci the network) counts as exposed, as
    does anything that cannot be read. For tcp, the destination is what libzmq connects to:
    the part after `;` in the source-address form `tcp://SOURCE;HOST:PORT`, and a host name
    counts as local only if it resolves, and only to loopback addresses.
    """
    transport, sep, address = endpoint.partition("://")
    if not sep:
        return True
    if transport in ("inproc", "ipc"):
        return False
    if transport != "tcp":
        return True
    host = address.rpartition(";")[2].rpartition(":")[0]
    return not _loopback(host.removeprefix("[").removesuffix("]"))


def _loopback(host: str) -> bool:
    """The host is a loopback address, or a name that resolves only to loopback addresses."""
    if not host or host == "*":
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return bool(found) and all(ipaddress.ip_address(a[4][0].partition("%")[0]).is_loopback
                               for a in found)


def make_keys(folder: Path, name: str) -> tuple[Path, Path]:
    """A new key pair: FOLDER/NAME.key (public) and FOLDER/NAME.key_secret (secret)."""
    folder.mkdir(parents=True, exist_ok=True)
    public, secret = zmq.auth.create_certificates(str(folder), name)
    Path(secret).chmod(0o600)
    return Path(public), Path(secret)


def _load(path: Path, what: str, secret: bool) -> tuple[bytes, bytes | None]:
    try:
        public, private = zmq.auth.load_certificate(str(path))
    except (OSError, ValueError) as e:
        raise ValueError(f"{what} {path}: not a ZeroMQ certificate ({e}); make a pair with "
                         "`edgert keys DIR --name NAME`") from None
    if secret and private is None:
        raise ValueError(f"{what} {path}: holds no secret key; give the NAME.key_secret file")
    return public, private


def _authenticator() -> ThreadAuthenticator:
    """One ZAP handler for the process, started on first use."""
    global _auth
    with _auth_lock:
        if _auth is None:
            _auth = ThreadAuthenticator(zmq.Context.instance())
            _auth.start()
        return _auth


@dataclass(frozen=True)
class Security:
    """This end's CURVE setup. `keys`: its NAME.key_secret; `server_key`: the server's NAME.key
    (connecting end); `clients`: the folder of public keys allowed in (binding end);
    `insecure`: allow an exposed endpoint in the clear, with a warning."""

    keys: Path | None = None
    server_key: Path | None = None
    clients: Path | None = None
    insecure: bool = False

    def apply(self, socket: zmq.Socket, endpoint: str, bind: bool) -> zmq.Socket | None:
        """Set the socket up before it binds or connects; the monitor socket of a CURVE
        server, whose events count refused peers."""
        if self.keys is None:
            if exposed(endpoint):
                if not self.insecure:
                    raise ValueError(f"endpoint {endpoint} is reachable from other machines: "
                                     "give CURVE keys (`edgert keys`; params keys, clients or "
                                     "server_key), or set insecure: true to send in the clear")
                log.warning("endpoint %s is reachable from other machines and sends in the "
                            "clear (insecure: true)", endpoint)
            return None
        public, secret = _load(Path(self.keys), "keys", secret=True)
        socket.curve_publickey, socket.curve_secretkey = public, secret
        if not bind:
            if self.server_key is None:
                raise ValueError(f"endpoint {endpoint}: a CURVE client needs server_key, the "
                                 "server's NAME.key")
            socket.curve_serverkey = _load(Path(self.server_key), "server_key", False)[0]
            return None
        if self.clients is None or not Path(self.clients).is_dir():
            raise ValueError(f"endpoint {endpoint}: a CURVE server needs clients, a folder "
                             f"of the public keys it lets in (got {self.clients})")
        socket.curve_server = True
        socket.zap_domain = endpoint.encode()
        _authenticator().configure_curve(domain=endpoint, location=str(self.clients))
        return socket.get_monitor_socket(FAILED)


def refused(monitor: zmq.Socket | None) -> int:
    """Failed handshakes reported on `monitor` since the last call."""
    count = 0
    while monitor is not None and monitor.poll(0):
        monitor.recv_multipart()
        count += 1
    return count
