"""ZeroMQ endpoints as nodes: a receiving source (SUB, PULL, REP or ROUTER) and a sending sink
(PUB, PUSH, or the reply side of a ROUTER service).

The wire format is the README's (docs/wire.md). Defaults follow the usual topology: the
long-lived side binds (PUB, PULL, REP, ROUTER), the other connects; `bind` overrides. A
request/response service is a `zmq_in` with `pattern: router` and, downstream, a `zmq_out`
with `pattern: reply` on the same endpoint: the reply goes back to the client that asked.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from edgert.runtime.node import Node, Params, Source, UserPath
from edgert.streams import Chunk
from edgert.streams.zmq_link import (MAX_MESSAGE, PUBSUB_HWM, PULL_HWM, Answerer, Publisher,
                                     Puller, Pusher, Replier, Server, Subscriber)
from edgert.streams.zmq_security import Security


class Secured(Params):
    """CURVE for an endpoint reachable from other machines (`edgert keys` makes the pairs)."""

    keys: UserPath | None = Field(None, description="this end's NAME.key_secret")
    server_key: UserPath | None = Field(None, description="connecting end: the server's "
                                        "NAME.key")
    clients: UserPath | None = Field(None, description="binding end: folder of the public "
                                     "keys allowed in")
    insecure: bool = Field(False, description="allow an endpoint off this machine without "
                           "keys (in the clear; warns)")

    def security(self) -> Security:
        return Security(self.keys, self.server_key, self.clients, self.insecure)


class ZMQIn(Source):
    """Chunks from a SUB, PULL, REP or ROUTER socket. REP acknowledges each request with an
    empty chunk carrying the request's seq, once the chunk is accepted into the pipeline;
    ROUTER leaves the answer to a `zmq_out` with `pattern: reply` downstream."""

    class Params(Secured):
        endpoint: str = Field(description="e.g. tcp://127.0.0.1:5555")
        pattern: Literal["sub", "pull", "rep", "router"] = "sub"
        bind: bool | None = None
        topic: str = Field("", description="SUB only: stream-name prefix to receive")
        max_message_mb: float = Field(MAX_MESSAGE / 2**20, gt=0, description="a peer that "
                                      "sends a larger frame is disconnected")
        hwm: int | None = Field(None, gt=0, description="SUB and PULL: messages queued before "
                                "ZeroMQ drops (SUB) or holds senders back (PULL); at most "
                                "hwm x max_message_mb in flight (default 100 SUB, 1000 PULL)")

    def start(self) -> None:
        p, security = self.p, self.p.security()
        bind, limit = p.bind is not False, round(p.max_message_mb * 2**20)
        if p.pattern == "sub":
            self.link = Subscriber(p.endpoint, p.topic, bind=bool(p.bind),
                                   hwm=p.hwm or PUBSUB_HWM, security=security,
                                   max_message=limit)
        elif p.pattern == "pull":
            self.link = Puller(p.endpoint, bind=bind, hwm=p.hwm or PULL_HWM, security=security,
                               max_message=limit)
        elif p.pattern == "router":
            self.link = Server(p.endpoint, bind=bind, security=security, max_message=limit)
        else:
            self.link = Replier(p.endpoint, bind=bind, security=security, max_message=limit)

    def read(self, timeout: float) -> Chunk | None:
        if self.p.pattern == "router":
            return self.link.receive(timeout)
        if self.p.pattern != "rep":
            return self.link.pull(timeout)
        chunk = self.link.receive(timeout)
        if chunk is not None:
            self.link.reply(Chunk(chunk.data[:0], chunk.timestamps[:0], chunk.info, chunk.seq))
        return chunk

    def stop(self) -> None:
        self.link.close()

    def stats(self) -> dict:
        out = {"endpoint": self.link.endpoint, "missed": getattr(self.link, "missed", 0),
               "refused": self.link.refused}
        if self.p.pattern == "router":
            out |= {"requests": self.link.requests, "answered": self.link.answered,
                    "expired": self.link.expired}
        return out


class ZMQOut(Node):
    """Sends every chunk on a PUB or PUSH socket, or (`reply`) answers the request of the same
    seq that a `zmq_in` with `pattern: router` on `endpoint` received."""

    outputs = ()

    class Params(Secured):
        endpoint: str = Field(description="e.g. tcp://127.0.0.1:5556")
        pattern: Literal["pub", "push", "reply"] = "pub"
        bind: bool | None = None
        hwm: int = Field(100, gt=0, description="messages queued per peer before dropping "
                         "(PUB) or blocking (PUSH)")

    def start(self) -> None:
        p, security = self.p, self.p.security()
        if p.pattern == "pub":
            self.link = Publisher(p.endpoint, bind=p.bind is not False, hwm=p.hwm,
                                  security=security)
        elif p.pattern == "reply":
            self.link = Answerer(p.endpoint)
        else:
            self.link = Pusher(p.endpoint, bind=bool(p.bind), hwm=p.hwm, security=security)

    def process(self, inputs: dict[str, Chunk]) -> None:
        if self.p.pattern == "reply":
            self.link.answer(inputs["in"])
        else:
            self.link.push(inputs["in"])

    def stop(self) -> None:
        self.link.close(linger=1.0)

    def stats(self) -> dict:
        if self.p.pattern == "reply":
            return {"endpoint": self.p.endpoint}
        return {"endpoint": self.link.endpoint, "refused": self.link.refused}
