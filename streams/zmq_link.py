"""ZeroMQ sockets that speak chunks: PUB/SUB, PUSH/PULL and REQ/REP, one class per role.

Every class owns one socket of the process-wide zmq.Context.instance(); the caller chooses
bind or connect (defaults: the long-lived side binds — PUB, PULL and REP). Sends are zero-copy
for payloads of zmq.COPY_THRESHOLD (64 KiB) and more (pyzmq copies smaller ones, which is
cheaper); ZeroMQ reads the array later from its I/O thread, so never modify a chunk after
sending it. Receives wait in a zmq.Poller, so they sleep rather than spin, and return None on
timeout; decoded arrays are views of the received message.
The wire format is docs/wire.md; PUB/SUB messages carry the stream name as a first frame.
An endpoint reachable from other machines needs CURVE keys (`Security`, zmq_security.py) or an
explicit `insecure` flag.
"""
from __future__ import annotations

import socket
import time
from typing import Callable, Self

import zmq

from edgert.streams import wire
from edgert.streams.chunk import Chunk
from edgert.streams.clock import local_clock
from edgert.streams.zmq_security import Security, refused

PUBSUB_HWM = 100
PULL_HWM = 1000
MAX_PENDING = 10_000  # requests a Server keeps waiting for their answers
MAX_MESSAGE = 64 << 20  # bytes: a receiving socket drops a peer that sends a larger frame


def free_endpoint(host: str = "127.0.0.1") -> str:
    """A tcp endpoint on a port nothing listens on right now (for demos and tests)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return f"tcp://{host}:{s.getsockname()[1]}"


def listening(endpoint: str, timeout: float) -> bool:
    """True once something accepts TCP connections at a tcp:// endpoint (within `timeout` s)."""
    host, _, port = endpoint.removeprefix("tcp://").rpartition(":")
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=0.2).close()
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)


def _ms(timeout: float | None) -> int | None:
    return None if timeout is None else max(0, int(timeout * 1000))


class _Link:
    """One socket, bound or connected, with a poller for receiving."""

    stage = "zmq"

    def __init__(self, kind: int, endpoint: str, bind: bool, security: Security | None = None,
                 **options: int):
        self.socket = zmq.Context.instance().socket(kind)
        for option, value in options.items():
            self.socket.setsockopt(getattr(zmq, option), value)
        try:
            self.monitor = (security or Security()).apply(self.socket, endpoint, bind)
        except ValueError:
            self.socket.close(linger=0)
            raise
        self._refused = 0
        if bind:
            self.socket.bind(endpoint)
            endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            self.socket.connect(endpoint)
        self.endpoint = endpoint
        self._poller = zmq.Poller()
        self._poller.register(self.socket, zmq.POLLIN)

    def _recv(self, timeout: float | None) -> list[zmq.Frame] | None:
        deadline = None if timeout is None else local_clock() + timeout
        while True:
            wait = None if deadline is None else max(0.0, deadline - local_clock())
            if not self._poller.poll(_ms(wait)):
                return None
            try:
                return self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:  # readable, yet nothing: a REQ dropped a stale reply
                if deadline is not None and local_clock() >= deadline:
                    return None

    def _send(self, frames: list, timeout: float | None, stream: str) -> None:
        self.socket.setsockopt(zmq.SNDTIMEO, -1 if timeout is None else _ms(timeout))
        try:
            self.socket.send_multipart(frames, copy=False)
        except zmq.Again:
            raise TimeoutError(f"no peer at {self.endpoint} took stream {stream!r} "
                               f"within {timeout} s") from None

    def _decode(self, frames: list, reply: bool = False) -> Chunk:
        chunk = wire.decode(frames, reply)
        now = local_clock()
        chunk.trace.append((self.stage, float(chunk.timestamps[-1]) if len(chunk) else now, now))
        return chunk

    @property
    def refused(self) -> int:
        """Peers whose CURVE handshake failed (no key, or one not allowed in); still readable
        after close()."""
        if self.monitor is not None and not self.monitor.closed:
            self._refused += refused(self.monitor)
        return self._refused

    def close(self, linger: float = 0.0) -> None:
        """Close the socket; messages still queued after `linger` seconds are dropped."""
        if self.monitor is not None and not self.monitor.closed:
            self._refused += refused(self.monitor)
            self.socket.disable_monitor()
            self.monitor.close(linger=0)
        self.socket.close(linger=_ms(linger))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Publisher(_Link):
    """PUB: fan-out to every subscriber. Never blocks: a subscriber that falls behind by more
    than both high-water marks (`hwm` here, the subscriber's there) plus what the TCP buffers
    hold loses the newest ones (ZeroMQ drops them; Subscriber.missed counts them)."""

    def __init__(self, endpoint: str, bind: bool = True, hwm: int = PUBSUB_HWM,
                 security: Security | None = None):
        super().__init__(zmq.PUB, endpoint, bind, security, SNDHWM=hwm)
        self.pushed = 0

    def push(self, chunk: Chunk) -> None:
        topic = chunk.info.name.encode()
        self.socket.send_multipart([topic, *wire.encode(chunk)], copy=False)
        self.pushed += 1


class Subscriber(_Link):
    """SUB: chunks of every stream whose name starts with `topic` ("" = all streams).

    A subscriber that connects late, or falls behind, misses chunks; `missed` counts the
    holes in each stream's seq numbers.
    """

    stage = "zmq_sub"

    def __init__(self, endpoint: str, topic: str = "", bind: bool = False,
                 hwm: int = PUBSUB_HWM, security: Security | None = None,
                 max_message: int = MAX_MESSAGE):
        super().__init__(zmq.SUB, endpoint, bind, security, RCVHWM=hwm, MAXMSGSIZE=max_message)
        self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.missed = 0
        self._last_seq: dict[str, int] = {}

    def pull(self, timeout: float | None = 0.2) -> Chunk | None:
        """The next chunk, waiting up to `timeout` seconds; raises WireError if malformed."""
        frames = self._recv(timeout)
        if frames is None:
            return None
        if len(frames) != 3:
            raise wire.WireError(None, "frames", f"expected 3 frames [topic, header, payload] "
                                 f"from a publisher, got {len(frames)}")
        chunk = self._decode(frames[1:])
        if frames[0].bytes != chunk.info.name.encode():
            raise wire.WireError(chunk.info.name, "topic", f"topic frame {frames[0].bytes!r} "
                                 "is not the stream name")
        self._count_missed(chunk)
        return chunk

    def _count_missed(self, chunk: Chunk) -> None:
        last = self._last_seq.get(chunk.info.name)
        if last is not None and chunk.seq > last + 1:
            self.missed += chunk.seq - last - 1
        self._last_seq[chunk.info.name] = chunk.seq


class Pusher(_Link):
    """PUSH: lossless hand-off to the pullers, round robin. push blocks (backpressure) while
    every puller is `hwm` messages behind, or while a bound pusher has no puller yet."""

    def __init__(self, endpoint: str, bind: bool = False, hwm: int = 1000,
                 security: Security | None = None):
        super().__init__(zmq.PUSH, endpoint, bind, security, SNDHWM=hwm)
        self.pushed = 0

    def push(self, chunk: Chunk, timeout: float | None = None) -> None:
        """Queue the chunk; raises TimeoutError if no puller takes it within `timeout` s."""
        self._send(wire.encode(chunk), timeout, chunk.info.name)
        self.pushed += 1


class Puller(_Link):
    """PULL: chunks from any number of pushers, fair-queued."""

    stage = "zmq_pull"

    def __init__(self, endpoint: str, bind: bool = True, hwm: int = PULL_HWM,
                 security: Security | None = None, max_message: int = MAX_MESSAGE):
        super().__init__(zmq.PULL, endpoint, bind, security, RCVHWM=hwm, MAXMSGSIZE=max_message)

    def pull(self, timeout: float | None = 0.2) -> Chunk | None:
        """The next chunk, waiting up to `timeout` seconds; raises WireError if malformed."""
        frames = self._recv(timeout)
        return None if frames is None else self._decode(frames)


class Requester(_Link):
    """REQ: send a chunk, wait for the reply chunk. After a timeout the next request may go
    at once; a late reply to the old one is discarded (REQ_RELAXED + REQ_CORRELATE)."""

    stage = "zmq_req"

    def __init__(self, endpoint: str, bind: bool = False, security: Security | None = None,
                 max_message: int = MAX_MESSAGE):
        super().__init__(zmq.REQ, endpoint, bind, security, REQ_RELAXED=1, REQ_CORRELATE=1,
                         MAXMSGSIZE=max_message)

    def request(self, chunk: Chunk, timeout: float | None = 5.0) -> Chunk:
        """The reply; TimeoutError if none within `timeout` s, RemoteError if the peer failed."""
        deadline = None if timeout is None else local_clock() + timeout
        self._send(wire.encode(chunk), timeout, chunk.info.name)
        frames = self._recv(None if deadline is None else deadline - local_clock())
        if frames is None:
            raise TimeoutError(f"no reply from {self.endpoint} to stream {chunk.info.name!r} "
                               f"within {timeout} s")
        return self._decode(frames, reply=True)


class Replier(_Link):
    """REP: receive a request chunk, answer with a reply chunk (or an error message)."""

    stage = "zmq_rep"

    def __init__(self, endpoint: str, bind: bool = True, security: Security | None = None,
                 max_message: int = MAX_MESSAGE):
        super().__init__(zmq.REP, endpoint, bind, security, MAXMSGSIZE=max_message)

    def receive(self, timeout: float | None = 0.2) -> Chunk | None:
        """The next request; each one must be answered with reply() or fail() before the next."""
        frames = self._recv(timeout)
        if frames is None:
            return None
        try:
            return self._decode(frames)
        except (wire.WireError, wire.RemoteError) as exc:
            self.fail(str(exc))
            raise

    def reply(self, chunk: Chunk) -> None:
        """Answer the last request; a chunk that cannot be encoded is answered as an error."""
        try:
            frames = wire.encode(chunk)
        except wire.WireError as exc:
            self.fail(str(exc))
            raise
        self.socket.send_multipart(frames, copy=False)

    def fail(self, message: str) -> None:
        """Answer with an error; the requester raises RemoteError(message)."""
        self.socket.send_multipart(wire.encode_error(message))

    def serve_once(self, handler: Callable[[Chunk], Chunk], timeout: float | None = 0.2) -> bool:
        """Answer one request with handler(request); False if none came within `timeout` s.

        If the request is malformed or the handler raises, the requester gets the error
        message and the exception is raised here too, with the socket ready for the next one.
        """
        request = self.receive(timeout)
        if request is None:
            return False
        try:
            response = handler(request)
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}")
            raise
        self.reply(response)
        return True


def reply_address(endpoint: str) -> str:
    """The in-process address on which a Server takes the answers to its requests."""
    return f"inproc://edgert-replies/{endpoint}"


class Server(_Link):
    """ROUTER: requests from any number of REQ or DEALER clients at once, each answered later
    and from any thread, so a pipeline can compute the answer downstream.

    receive() renumbers each request's seq to a server-wide request id (clients' own seqs
    may collide) and keeps its envelope; an Answerer (another thread) sends the reply chunk,
    which keeps that seq, back through an in-process socket; the next receive() forwards it
    to the right client with the client's seq restored. Requests unanswered after `forget`
    seconds are dropped from the table (their clients have timed out).
    """

    stage = "zmq_router"

    def __init__(self, endpoint: str, bind: bool = True, forget: float = 60.0,
                 security: Security | None = None, max_message: int = MAX_MESSAGE):
        super().__init__(zmq.ROUTER, endpoint, bind, security, MAXMSGSIZE=max_message)
        self.replies = zmq.Context.instance().socket(zmq.PULL)
        self.replies.bind(reply_address(endpoint))
        self._poller.register(self.replies, zmq.POLLIN)
        self.forget = forget
        self.pending: dict[int, tuple[list, int, float]] = {}
        self.requests = self.answered = self.expired = 0

    def receive(self, timeout: float | None = 0.2) -> Chunk | None:
        """The next request (forwarding the answers that arrived meanwhile)."""
        deadline = None if timeout is None else local_clock() + timeout
        while True:
            wait = None if deadline is None else max(0.0, deadline - local_clock())
            ready = dict(self._poller.poll(_ms(wait)))
            if self.replies in ready:
                self._forward(self.replies.recv_multipart(copy=False))
            if self.socket in ready:
                return self._request(self.socket.recv_multipart(copy=False))
            if not ready:
                return None

    def _request(self, frames: list) -> Chunk:
        split = next((i for i, f in enumerate(frames) if not f.bytes), 0)
        envelope, body = frames[:split + 1], frames[split + 1:]
        try:
            chunk = self._decode(body)
        except (wire.WireError, wire.RemoteError) as exc:
            self.socket.send_multipart([*envelope, *wire.encode_error(str(exc))])
            raise
        self.requests += 1
        self._prune()
        self.pending[self.requests] = (envelope, chunk.seq, local_clock())
        chunk.seq = self.requests
        return chunk

    def _forward(self, frames: list) -> None:
        seq = int.from_bytes(frames[0].bytes, "little")
        pending = self.pending.pop(seq, None)
        if pending is None:
            return
        envelope, client_seq, _ = pending
        self.answered += 1
        reply = wire.decode(frames[1:]) if len(frames) > 2 else None
        if reply is None:
            self.socket.send_multipart([*envelope, *wire.encode_error(frames[1].bytes.decode())])
        else:
            reply.seq = client_seq
            self.socket.send_multipart([*envelope, *wire.encode(reply)], copy=False)

    def _prune(self) -> None:
        """Forget requests older than `forget` s, and the oldest beyond MAX_PENDING (a flood
        of requests never answered cannot grow the table without bound)."""
        old = local_clock() - self.forget
        while self.pending:  # oldest first: the table is in arrival order
            seq, (_, _, t) = next(iter(self.pending.items()))
            if t >= old and len(self.pending) < MAX_PENDING:
                return
            del self.pending[seq]
            self.expired += 1

    def close(self, linger: float = 0.0) -> None:
        self.replies.close(linger=0)
        super().close(linger)


class Answerer:
    """Sends answers to a Server in this process, from the thread that owns this object."""

    def __init__(self, endpoint: str):
        self.socket = zmq.Context.instance().socket(zmq.PUSH)
        self.socket.connect(reply_address(endpoint))

    def answer(self, chunk: Chunk) -> None:
        """Answer request `chunk.seq` (the seq the Server gave it) with `chunk`."""
        self.socket.send_multipart([chunk.seq.to_bytes(8, "little"), *wire.encode(chunk)],
                                   copy=False)

    def fail(self, seq: int, message: str) -> None:
        """Answer request `seq` with an error; the client raises RemoteError(message)."""
        self.socket.send_multipart([seq.to_bytes(8, "little"), message.encode()])

    def close(self, linger: float = 0.0) -> None:
        self.socket.close(linger=_ms(linger))
