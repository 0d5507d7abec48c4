"""Prometheus endpoint for a running pipeline, bound to 127.0.0.1, read from its report."""
from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily


class PipelineCollector:
    """Turns `pipeline.report()` into metrics at scrape time (nothing on the hot path)."""

    def __init__(self, pipeline):
        self.pipeline = pipeline

    def collect(self):
        report = self.pipeline.report()
        latency = GaugeMetricFamily("edgert_latency_ms", "latency percentiles over the recent "
                                    "window", labels=["stage", "quantile"])
        for q in ("p50", "p90", "p99", "max"):
            latency.add_metric(["end_to_end", q], report["end_to_end"][f"{q}_ms"])
            for name, node in report["nodes"].items():
                latency.add_metric([name, q], node[f"{q}_ms"])
        yield latency
        for key in ("processed", "dropped", "quarantined"):
            counter = CounterMetricFamily(f"edgert_{key}", f"chunks {key} per node",
                                          labels=["node"])
            for name, node in report["nodes"].items():
                counter.add_metric([name], node[key])
            yield counter


def serve(pipeline, port: int) -> WSGIServer:
    """Start the endpoint on 127.0.0.1:port (0 picks a free port: see server.server_port)."""
    registry = CollectorRegistry()
    registry.register(PipelineCollector(pipeline))
    server, _thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    return server
