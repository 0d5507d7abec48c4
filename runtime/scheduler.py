"""Event-driven execution: a node runs when its input arrives, never on a timer.

Sources run in their own threads. Behind a `block` edge the consumer runs inline in the
producer's thread (run to completion: no thread hand-off, backpressure for free); behind a
`latest` edge, or when asked, the consumer has its own worker thread so the producer never
waits. A per-node lock keeps each node's `process` single-threaded.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import replace

import numpy as np

from edgert.runtime.edge import Edge
from edgert.runtime.node import BadChunk, Misconfigured, Node, Source
from edgert.runtime.quarantine import Quarantine
from edgert.runtime.tracer import Latency, Tracer
from edgert.streams import Chunk, local_clock
from edgert.streams.wire import WireError

log = logging.getLogger(__name__)
SILENCE_S = 2.0  # a regular stream quiet this long is reported
JUMP_S = 0.1  # timestamps this far back from the newest seen: the source's clock was reset
RESTART_S, RESTART_MAX_S = 0.1, 5.0  # on_error: restart backs off from 0.1 s to 5 s
MAX_STREAMS = 1024  # streams whose newest stamp is remembered; the least recent goes first
STOP_AFTER = 2  # chunks of a stream no node input can take before the run stops


class Scheduler:
    def __init__(self, nodes: dict[str, Node], edges: list[Edge], threaded: set[str],
                 order: list[str], on_error: dict[str, str] | None = None):
        self.nodes, self.edges, self.order = nodes, edges, order
        self.on_error = on_error or {}
        self.restarts = {name: 0 for name in nodes}
        self.silences = {name: 0 for name in nodes}
        self.clock_jumps = {name: 0 for name in nodes}
        self.longest_silence = {name: 0.0 for name in nodes}
        self.inputs: dict[str, list[Edge]] = {name: [] for name in nodes}
        self.outputs: dict[str, dict[str, list[Edge]]] = {name: {} for name in nodes}
        for e in edges:
            self.inputs[e.dst].append(e)
            self.outputs[e.src].setdefault(e.src_port, []).append(e)
        self.sinks = {name for name in nodes if not self.outputs[name] and nodes[name].latency}
        self.threaded = {n for n in nodes if n in threaded or any(
            e.policy == "latest" for e in self.inputs[n])} - self._sources()
        self.locks = {name: threading.Lock() for name in nodes}
        self.wake = {name: threading.Event() for name in self.threaded}
        for e in edges:
            e.on_put = self.wake[e.dst].set if e.dst in self.threaded else (
                lambda n=e.dst: self.drain(n))
        self.tracer = Tracer(list(nodes), self.sinks)
        self.quarantine = Quarantine()
        self.processed = {name: 0 for name in nodes}
        self.running = threading.Event()
        self.fatal: str | None = None  # why the run stopped itself (a Misconfigured node)
        self.died: dict[str, str] = {}  # sources whose loop failed, and why
        self.last_heard: dict[str, float] = {}
        self.newest: OrderedDict[tuple, float] = OrderedDict()  # newest stamp per stream
        self.next_restart = {name: 0.0 for name in nodes}
        self.verdicts: OrderedDict[tuple, str] = OrderedDict()  # Node.check per stream
        self.refusals: dict[tuple, int] = {}
        self.admitted: set[tuple[str, str]] = set()  # inputs that took a stream
        self.threads: list[threading.Thread] = []
        self.workers: list[threading.Thread] = []

    def _sources(self) -> set[str]:
        return {n for n, node in self.nodes.items() if isinstance(node, Source)}

    def start(self) -> None:
        self.running.set()
        for name in self.threaded:
            self.workers.append(self._thread(self._work, name))
        for name in self._sources():
            self.threads.append(self._thread(self._read, name))

    def _thread(self, target, name: str) -> threading.Thread:
        t = threading.Thread(target=target, args=(name,), name=f"edgert-{name}", daemon=True)
        t.start()
        return t

    def stop(self, timeout: float = 5.0) -> None:
        """Stop sources, then let every queued chunk reach its sink (block edges lose nothing)."""
        self.running.clear()
        for t in self.threads:
            t.join(timeout)
        for name in self.order:
            self.drain(name)
        for t in self.workers:
            t.join(timeout)
        for e in self.edges:
            e.close()

    def _read(self, name: str) -> None:
        """A source's loop. Nothing a peer sends can end it: a refused message is counted and
        costs no wait; a read that raises is counted too and retried, backing off only while
        it keeps failing. Should the loop itself fail, the run records why (a shortfall)."""
        failing = 0
        try:
            while self.running.is_set():
                try:
                    chunk = self.nodes[name].read(0.1)
                except Misconfigured as e:
                    self._stop_run(f"node {name!r}: {e}")
                    return
                except (BadChunk, WireError) as e:  # a peer's bad message: count it, read on
                    self.quarantine.reject(name, e.kind if isinstance(e, BadChunk) else "wire",
                                           str(e))
                    continue
                except Exception as e:
                    self._failed(name, "read", None, e)
                    failing += 1
                    if failing > 1:  # a broken device, not one bad message: do not spin
                        time.sleep(min(0.01 * 2 ** failing, 0.5))
                    continue
                failing = 0
                if chunk is None:
                    continue
                try:
                    self._source_chunk(name, chunk)
                except Exception as e:  # a defect met on one chunk: count it, read on
                    self._failed(name, "out", chunk, e)
        except Exception as e:  # a defect here must not end the source in silence
            log.exception("source %r stopped", name)
            self.died[name] = f"source {name!r} stopped: {type(e).__name__}: {e}"
            if self.on_error.get(name) == "stop":
                self._stop_run(self.died[name])

    def _source_chunk(self, name: str, chunk: Chunk) -> None:
        """Time and pass on one chunk a source read (its stamps must be times to be timed;
        the rest of it is checked at each node it reaches). Samples stamped NaN or Inf (an
        LSL outlet may send them) are quarantined; the others go on, after a gap."""
        stamps = np.asarray(chunk.timestamps)
        if stamps.dtype.kind not in "fiu":
            self.quarantine.add(name, "out", chunk, "timestamps", "timestamps that are not "
                                "numbers")
            return
        good = np.isfinite(stamps)
        if not good.all():
            self.quarantine.add(name, "out", chunk, "timestamps", f"{int((~good).sum())} of "
                                f"{len(stamps)} samples stamped NaN or Inf")
            if not good.any() or len(stamps) != len(chunk.data):
                return
            chunk = chunk.derive(chunk.data[good], stamps[good])
            chunk.gap = True
        now = time.monotonic()
        self._heard(name, chunk, self.last_heard.get(name))
        self.last_heard[name] = now
        jumped = self._jumped(name, chunk)
        self.processed[name] += 1
        if len(chunk) and not jumped:
            self._latency(name, chunk, self.tracer.stages[name])
        self._emit(name, {"out": chunk})

    def _work(self, name: str) -> None:
        wake = self.wake[name]
        while self.running.is_set():
            wake.wait(0.1)
            wake.clear()
            self.drain(name)

    def drain(self, name: str) -> None:
        """Run `name` on everything queued for it, one chunk per input in turn."""
        edges = self.inputs[name]
        lock = self.locks[name]
        while any(len(e) for e in edges):
            if not lock.acquire(blocking=False):
                return
            try:
                progressed = True
                while progressed:
                    progressed = False
                    for e in edges:
                        chunk = e.get()
                        if chunk is not None:
                            self._run(name, e.dst_port, chunk)
                            progressed = True
            finally:
                lock.release()

    def _run(self, name: str, port: str, chunk: Chunk) -> None:
        node = self.nodes[name]
        if not self.quarantine.check(name, port, chunk, node.accepts_nonfinite):
            return
        if not self._admitted(name, port, chunk):
            return
        t0 = local_clock()
        try:
            out = node.process({port: chunk})
        except BadChunk as e:
            self.quarantine.add(name, port, chunk, e.kind, str(e))
            return
        except Misconfigured as e:
            self._stop_run(f"node {name!r}: {e}")
            return
        except Exception as e:
            self._failed(name, port, chunk, e)
            return
        t1 = local_clock()
        self.tracer.stages[name].add(t1 - t0)
        self.processed[name] += 1
        if name in self.sinks and len(chunk):
            self.tracer.sinks[name].add(t1 - chunk.timestamps[-1])
        if out:
            self._emit(name, out, t0, t1)

    def _admitted(self, name: str, port: str, chunk: Chunk) -> bool:
        """Whether the node can take this chunk's stream (`Node.check`, asked once per
        stream). A stream it cannot take is quarantined; if no other stream ever reached that
        input, the run stops once it has sent STOP_AFTER chunks (a misconfiguration, not a
        stray frame)."""
        key = (name, port, chunk.info)
        verdict = self.verdicts.get(key)
        if verdict is None:
            try:
                self.nodes[name].check(port, chunk.info)
                verdict = ""
            except Misconfigured as e:
                verdict = str(e)
            self.verdicts[key] = verdict
            if len(self.verdicts) > MAX_STREAMS:
                self.refusals.pop(self.verdicts.popitem(last=False)[0], None)
        if not verdict:
            self.admitted.add((name, port))
            return True
        self.quarantine.add(name, port, chunk, "stream", verdict)
        self.refusals[key] = self.refusals.get(key, 0) + 1
        if (name, port) not in self.admitted and self.refusals[key] >= STOP_AFTER:
            self._stop_run(f"node {name!r}: {verdict}")
        return False

    @staticmethod
    def _latency(name: str, chunk: Chunk, stage: Latency) -> None:
        """Time since the newest sample's stamp; a stamp ahead of the clock, or over a day
        behind it, is a clock fault, named once."""
        ahead = chunk.timestamps[-1] - local_clock()
        if not stage.add(-ahead) and stage.clock_faults == 1:
            where = f"{ahead:.3f} s ahead of" if ahead > 0 else f"{-ahead:.0f} s behind"
            log.warning("node %r: stream %r is stamped %s this machine's clock: check the "
                        "sender's clock sync; such chunks are counted as clock_faults and "
                        "kept out of the latency percentiles", name, chunk.info.name, where)

    def _heard(self, name: str, chunk: Chunk, last: float | None) -> None:
        """A regular stream silent for over SILENCE_S before this chunk: counted, logged once
        per source (the other streams went on meanwhile)."""
        if last is None or chunk.info.rate <= 0:
            return
        quiet = time.monotonic() - last
        if quiet > SILENCE_S:
            self.silences[name] += 1
            self.longest_silence[name] = max(self.longest_silence[name], quiet)
            if self.silences[name] == 1:
                log.warning("node %r: stream %r was silent for %.1f s; counted in the "
                            "report's silences", name, chunk.info.name, quiet)

    def _jumped(self, name: str, chunk: Chunk) -> bool:
        """A stream's timestamps going back (its source's clock reset): the chunk is flagged
        `gap`, so windows and filters restart instead of mixing two clocks, and the jump is
        counted. Each stream of a source is judged against its own newest stamp, and a stamp
        ahead of this machine's clock (a clock fault) never becomes the newest."""
        if not len(chunk):
            return False
        key = (name, chunk.info.name, chunk.info.source_id)
        newest = min(float(chunk.timestamps[-1]), local_clock())
        stamp = self.newest.get(key)
        jumped = stamp is not None and chunk.timestamps[0] < stamp - JUMP_S
        self.newest[key] = newest if stamp is None or jumped else max(stamp, newest)
        self.newest.move_to_end(key)
        if len(self.newest) > MAX_STREAMS:
            self.newest.popitem(last=False)
        if not jumped:
            return False
        chunk.gap = True
        self.clock_jumps[name] += 1
        if self.clock_jumps[name] == 1:
            log.warning("node %r: stream %r jumped %.3f s back in time (its clock was reset); "
                        "the chunk is marked as a gap, counted in clock_jumps and kept out of "
                        "the latency percentiles", name, chunk.info.name,
                        stamp - chunk.timestamps[0])
        return True

    def _failed(self, name: str, port: str, chunk: Chunk | None, error: Exception) -> None:
        """A node raised: count it like a bad chunk and log the traceback once; then, as its
        `on_error` says, go on, restart the node, or stop the run."""
        kind = f"error:{type(error).__name__}"
        if self.quarantine.kinds[(name, kind)] == 0:
            log.exception("node %r raised on input %r", name, port)
        if chunk is not None:
            self.quarantine.add(name, port, chunk, kind, str(error))
        else:
            self.quarantine.reject(name, kind, str(error))
        policy = self.on_error.get(name, "continue")
        if policy == "stop":
            self._stop_run(f"node {name!r} raised {type(error).__name__}: {error} "
                           "(on_error: stop)")
        elif policy == "restart":
            self._restart(name)

    def _restart(self, name: str) -> None:
        """Stop and start the node again, at most once per back-off interval (doubling with
        each restart); failures in between are counted only. Never sleeps: the thread that
        hit the failure may be a source's, and the node's lock may be held."""
        now = time.monotonic()
        if now < self.next_restart[name]:
            return
        self.restarts[name] += 1
        self.next_restart[name] = now + min(RESTART_S * 2 ** (self.restarts[name] - 1),
                                            RESTART_MAX_S)
        node = self.nodes[name]
        try:
            node.stop()
            node.start()
        except Exception as e:
            self._stop_run(f"node {name!r} could not restart: {e}")

    def _stop_run(self, why: str) -> None:
        self.fatal = self.fatal or why
        self.running.clear()

    def _emit(self, name: str, out: dict, t0: float | None = None,
              t1: float | None = None) -> None:
        for port, value in out.items():
            edges = self.outputs[name].get(port)
            if not edges or value is None:
                continue
            for chunk in value if isinstance(value, list) else [value]:
                if t0 is not None:
                    chunk.trace.append((name, t0, t1))
                if len(edges) == 1:
                    self._deliver(edges[0], chunk)
                    continue
                for e in edges:
                    self._deliver(e, replace(chunk, trace=list(chunk.trace)))

    def _deliver(self, edge: Edge, chunk: Chunk) -> None:
        """Hand a chunk over. An idle inline consumer with nothing queued runs it right here,
        skipping the queue; otherwise the chunk waits in the edge under its policy."""
        name = edge.dst
        if name in self.threaded or len(edge) or not self.locks[name].acquire(blocking=False):
            edge.put(chunk)
            return
        try:
            if edge.fresh(chunk):
                edge.count += 1
                self._run(name, edge.dst_port, chunk)
        finally:
            self.locks[name].release()
        self.drain(name)
