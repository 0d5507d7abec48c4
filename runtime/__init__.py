"""The engine: pipeline graph from YAML, nodes, edges, scheduling, tracing, the CLI."""
