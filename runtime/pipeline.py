"""Pipeline: nodes and edges built from a validated spec, started, run, stopped, reported."""
from __future__ import annotations

import gc
import logging
import time
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from pydantic import ValidationError
from threadpoolctl import threadpool_limits

from edgert.devices.heap import keep_heap
from edgert.runtime import spec as specs
from edgert.runtime.edge import Edge
from edgert.runtime.node import Node, Source
from edgert.runtime.priority import threads_at
from edgert.runtime.registry import node_class
from edgert.runtime.scheduler import Scheduler
from edgert.runtime.spec import PipelineError, PipelineSpec
from edgert.streams import local_clock

log = logging.getLogger(__name__)


def build_node(spec: specs.NodeSpec, origin: str, pipeline: str = "") -> Node:
    try:
        cls = node_class(spec.node)
    except LookupError as e:
        raise PipelineError(f"{origin}: node {spec.name!r}: {e}") from None
    try:
        params = cls.Params.model_validate(spec.params)
    except ValidationError as e:
        lines = [f"{origin}: node {spec.name!r} ({spec.node}) has invalid params"]
        for err in e.errors():
            field = ".".join(str(x) for x in err["loc"])
            lines.append(f"  field 'params.{field}': {err['msg']}")
        known = ", ".join(cls.Params.model_fields) or "none"
        lines.append(f"  fields of {cls.__name__}: {known}")
        raise PipelineError("\n".join(lines)) from None
    return cls(spec.name, params, pipeline)


def _endpoint(ref: str, nodes: dict[str, Node], ports: str, origin: str) -> tuple[str, str]:
    """('node', 'port') from 'node' or 'node.port', checked against the node's ports."""
    name, _, port = ref.partition(".")
    if name not in nodes:
        raise PipelineError(f"{origin}: edge names node {name!r}, which is not in nodes "
                            f"{sorted(nodes)}")
    node = nodes[name]
    available = getattr(node, ports)
    if not available:
        kind = "inputs" if ports == "inputs" else "outputs"
        raise PipelineError(f"{origin}: node {name!r} has no {kind}, so it cannot be an edge's "
                            f"{'target' if ports == 'inputs' else 'source'}")
    port = port or available[0]
    if port not in available:
        raise PipelineError(f"{origin}: node {name!r} has no port {port!r}; its {ports} are "
                            f"{list(available)}")
    return name, port


class Pipeline:
    def __init__(self, spec: PipelineSpec, origin: str = "<pipeline>"):
        self.spec, self.origin = spec, origin
        self.nodes = {s.name: build_node(s, origin, spec.name) for s in spec.nodes}
        self.edges = [self._edge(e) for e in spec.chain()]
        self.order = self._order()
        self._check_inputs()
        threaded = {s.name for s in spec.nodes if s.thread}
        self.scheduler = Scheduler(self.nodes, self.edges, threaded, self.order,
                                   {s.name: s.on_error for s in spec.nodes})
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.metrics_server = None
        self.blas_limits = None
        self.priority: int | None = None

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: list[str] = ()) -> "Pipeline":
        return cls(specs.load(path, overrides), str(path))

    def _edge(self, e: specs.EdgeSpec) -> Edge:
        src, src_port = _endpoint(e.source, self.nodes, "outputs", self.origin)
        dst, dst_port = _endpoint(e.target, self.nodes, "inputs", self.origin)
        deadline = e.deadline_ms / 1e3 if e.deadline_ms else None
        return Edge(src, src_port, dst, dst_port, e.policy, e.capacity, deadline)

    def _order(self) -> list[str]:
        graph = {name: set() for name in self.nodes}
        for e in self.edges:
            graph[e.dst].add(e.src)
        try:
            return list(TopologicalSorter(graph).static_order())
        except CycleError as e:
            raise PipelineError(f"{self.origin}: edges form a cycle {e.args[1]}; data flows "
                                "one way, so remove one edge of the loop") from None

    def _check_inputs(self) -> None:
        fed = {(e.dst, e.dst_port) for e in self.edges}
        for name, node in self.nodes.items():
            missing = [p for p in node.inputs if (name, p) not in fed]
            if missing:
                raise PipelineError(f"{self.origin}: node {name!r} input(s) {missing} have no "
                                    "edge; add an edge {from: <node>, to: "
                                    f"{name}.{missing[0]}}}")

    def start(self) -> None:
        """Start nodes from the sinks up so each is ready before data reaches it.

        A node that cannot start stops the ones already started, and the error names it.
        While it runs, numpy's BLAS uses one thread: the pipeline's own threads are its
        parallelism, and a BLAS pool that spins between calls takes the cores from the
        sources (CogMoE's stage 1 ran 20 % slower, and late, with two BLAS threads). Freed
        memory stays in the process (`edgert.devices.heap`), so steady work does not page-fault.
        Everything alive once the nodes have started (modules, models) is frozen out of the
        garbage collector until `stop`: a full collection of the car pipeline's 350 000
        objects took 210 ms, a pause in the middle of a window; frozen, it takes microseconds.
        The pipeline's threads run at the spec's `priority` (`edgert.runtime.priority`)."""
        self.blas_limits = threadpool_limits(1, user_api="blas")
        keep_heap()
        with threads_at(self.spec.priority, self.origin) as self.priority:
            self._start_nodes()
            gc.freeze()
            self.started_at = local_clock()
            self.scheduler.start()
        if self.spec.metrics_port is not None:
            from edgert.runtime.metrics import serve
            self.metrics_server = serve(self, self.spec.metrics_port)

    def _start_nodes(self) -> None:
        started = []
        for name in reversed(self.order):
            try:
                self.nodes[name].start()
            except Exception as e:
                for done in started:
                    self.nodes[done].stop()
                self.blas_limits.restore_original_limits()
                raise PipelineError(f"{self.origin}: node {name!r} could not start: "
                                    f"{e}") from e
            started.append(name)

    def stop(self) -> None:
        """Stop once: sources first, then every queued chunk goes through, then the nodes."""
        if self.started_at is None or self.stopped_at is not None:
            return
        self.scheduler.stop()
        self.stopped_at = local_clock()
        for name in self.order:
            try:
                self.nodes[name].stop()
            except Exception:
                log.exception("node %r failed to stop cleanly", name)
        if self.metrics_server is not None:
            self.metrics_server.shutdown()
        self.blas_limits.restore_original_limits()
        gc.unfreeze()

    def run(self, duration: float | None = None) -> dict:
        """Run until `duration` seconds pass (or Ctrl-C), then stop and return the report."""
        self.start()
        try:
            end = None if duration is None else time.monotonic() + duration
            while end is None or time.monotonic() < end:
                time.sleep(0.05 if end is None else max(0.0, min(0.05, end - time.monotonic())))
        except KeyboardInterrupt:
            log.info("interrupted; stopping pipeline %r", self.spec.name)
        finally:
            self.stop()
        return self.report()

    @property
    def fatal(self) -> str | None:
        """Why the pipeline stopped itself (a node that cannot work as configured), if so."""
        return self.scheduler.fatal

    def shortfalls(self, report: dict) -> list[str]:
        """Why a finished run did not do its job: it stopped itself, a node quarantined every
        chunk it got, a source's loop failed, a sink received nothing, or a node failed at its
        job (its `failed`)."""
        found = [self.fatal] if self.fatal else []
        found += self.scheduler.died.values()
        for name, node in report["nodes"].items():
            if node["quarantined"] and not node["processed"]:
                found.append(f"node {name!r} quarantined all {node['quarantined']} chunks it "
                             "got (the report's quarantine counts say why)")
            elif name in self.scheduler.sinks and not node["processed"]:
                found.append(f"sink {name!r} received nothing in "
                             f"{report['duration_s']:.1f} s")
            if node.get("failed"):
                found.append(f"node {name!r}: {node['failed']}")
        return found

    def _extra(self, name: str) -> dict:
        """Restarts of a node that may restart; silences and clock jumps of a source."""
        sched, out = self.scheduler, {}
        if sched.on_error.get(name) == "restart":
            out["restarts"] = sched.restarts[name]
        if isinstance(self.nodes[name], Source):
            out |= {"silences": sched.silences[name],
                    "longest_silence_s": round(sched.longest_silence[name], 3),
                    "clock_jumps": sched.clock_jumps[name]}
        return out

    def report(self) -> dict:
        """Latency percentiles per node and end to end, counts, drops and quarantines."""
        sched = self.scheduler
        dropped = {name: 0 for name in self.nodes}
        for e in self.edges:
            dropped[e.dst] += e.dropped + e.expired
        nodes = {}
        for name, node in self.nodes.items():
            lat = sched.tracer.stages[name].summary()
            nodes[name] = {"p50_ms": lat["p50_ms"], "p90_ms": lat["p90_ms"],
                           "p99_ms": lat["p99_ms"], "max_ms": lat["max_ms"],
                           "clock_faults": lat["clock_faults"],
                           "processed": sched.processed[name], "dropped": dropped[name],
                           "quarantined": sched.quarantine.counts[name], **self._extra(name),
                           **node.stats()}
        end = self.stopped_at or local_clock()
        return {
            "pipeline": self.spec.name,
            "priority": self.priority,
            "duration_s": end - self.started_at if self.started_at else 0.0,
            "end_to_end": sched.tracer.end_to_end(),
            "nodes": nodes,
            "edges": [{"edge": e.label, "policy": e.policy, "capacity": e.capacity,
                       "chunks": e.count, "queued": len(e), "dropped": e.dropped,
                       "expired": e.expired}
                      for e in self.edges],
            "dropped": sum(dropped.values()),
            "quarantined": sched.quarantine.by_kind(),
            "clock_faults": sum(sched.tracer.stages[n].clock_faults for n in self.nodes
                                if isinstance(self.nodes[n], Source)),
        }
