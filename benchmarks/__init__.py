"""Latency benchmarks: `edgert bench [SUITE ...] --out DIR` and `edgert bench compare`.

Suites (each `run_X(quick, out_dir, progress, ...) -> {"config", "results"}`):
transport (`transport.run_transport`), inference (`inference.run_inference`), pipelines
(`pipelines.run_pipelines`), scenarios (`scenarios.run_scenarios`). `suite.run_bench` runs
them into DIR/results.json and DIR/report.md; `compare.compare_files` diffs two results.
Nothing is imported here, so a suite's module loads only what it needs.
"""
