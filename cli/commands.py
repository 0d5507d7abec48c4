"""The `edgert` command line: one surface for pipelines, streams, recording and replay."""
from __future__ import annotations

import json
import logging
import re
import signal
import tempfile
import time
from contextlib import contextmanager
from glob import glob
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.logging import RichHandler
from rich.markup import escape

from edgert import pipelines
from edgert.cli.console import report_table
from edgert.runtime.progress import Heartbeat
from edgert.runtime.spec import PipelineError

if TYPE_CHECKING:
    from edgert.runtime.pipeline import Pipeline

app = typer.Typer(help="edgert: a real-time edge runtime for ML models on LSL and ZeroMQ streams.",
                  no_args_is_help=True, add_completion=False)
console = Console() if Console().is_terminal else Console(width=160)  # a log keeps whole rows
errors = Console(stderr=True, soft_wrap=True,  # a path in a message stays one piece
                 width=None if Console(stderr=True).is_terminal else 160)


def _version(value: bool) -> None:
    if value:
        try:
            console.print(f"edgert {version('edgert')}")
        except PackageNotFoundError:
            console.print("edgert (not installed)")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    version_: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                  help="Print the version and exit."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log debug messages."),
) -> None:
    # SIGINT always raises KeyboardInterrupt, even when a shell without job control started
    # the process in the background (and handed it SIGINT ignored), so every command stops
    # cleanly and says where it stopped.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(message)s",
                        handlers=[RichHandler(console=errors, show_path=False)])
    logging.getLogger("numexpr").setLevel(logging.WARNING)  # "defaulting to 2 threads"
    beat = Heartbeat(f"edgert {ctx.invoked_subcommand}")
    beat.install()
    ctx.call_on_close(beat.stop)
    if ctx.invoked_subcommand != "doctor":
        _need_liblsl()


def _need_liblsl() -> None:
    """Every command but `doctor` runs on LSL: without liblsl, say so and how to fix it."""
    from edgert.cli.doctor import liblsl

    found = liblsl()
    if found.status == "fault":
        _fail(f"{found.detail}; {found.fix}", 1)


def _fail(message: str, code: int = 2) -> None:
    errors.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code)


def _output(path: Optional[Path]) -> Optional[Path]:
    """Make `path`'s folder now, before any long work, so a bad path fails at once."""
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"cannot write {path}: {e.strerror}; choose another --out")
    return path


def _write_json(path: Optional[Path], payload: dict, figures=None) -> None:
    """The JSON first, then any figures drawn from it (`figures(payload, path)`), each path
    printed."""
    if path is None:
        return
    _output(path).write_text(json.dumps(payload, indent=2))
    console.print(f"results written to {path}", soft_wrap=True)
    for figure in figures(payload, path) if figures else ():
        console.print(f"figure written to {figure}", soft_wrap=True)


def run_live(pipeline: Pipeline, duration: Optional[float], status=None,
             quiet: bool = False) -> None:
    """Show a started pipeline's live table (refreshed twice a second), and `status()` under
    it, until duration, Ctrl-C, or the pipeline stops itself; piped or logged, a plain line
    every few seconds instead. The caller stops it: a demo stops its clients first, so no
    reader sees its stream vanish."""
    from rich.console import Group

    def view():
        table = report_table(pipeline.report())
        return Group(table, status()) if status else table

    end = None if duration is None else time.monotonic() + duration
    global interrupted
    try:
        if not console.is_terminal:
            return _log_live(pipeline, end, status, quiet)
        with Live(view(), console=console, refresh_per_second=2, transient=True,
                  auto_refresh=False) as live:
            while (end is None or time.monotonic() < end) and not pipeline.fatal:
                time.sleep(min(0.5, max(0.0, end - time.monotonic())) if end else 0.5)
                if not quiet:
                    live.update(view(), refresh=True)
    except KeyboardInterrupt:
        interrupted = True
        console.print("stopping (Ctrl-C): the report follows; exit code 130")


def _log_live(pipeline: Pipeline, end: Optional[float], status, quiet: bool) -> None:
    """`run_live` where output is not a terminal: one line per EVERY_S seconds."""
    from edgert.runtime.progress import EVERY_S

    start = last = time.monotonic()
    while (end is None or time.monotonic() < end) and not pipeline.fatal:
        time.sleep(min(0.5, max(0.0, end - time.monotonic())) if end else 0.5)
        if quiet or time.monotonic() - last < EVERY_S:
            continue
        last = time.monotonic()
        report = pipeline.report()
        e2e = report["end_to_end"]
        left = f", {end - last:.0f} s left" if end else ""
        line = (f"{last - start:.0f} s{left}: {e2e['count']} outputs, end-to-end p50 "
                f"{e2e['p50_ms']:.1f} ms, dropped {report['dropped']}")
        line += "".join(f", {name} online accuracy {n['correct']}/{n['scored']}"
                        for name, n in report["nodes"].items() if n.get("scored"))
        console.print(line + (f"; {status()}" if status else ""), markup=False, soft_wrap=True)


interrupted = False  # Ctrl-C ended the run: the report is still printed and saved, exit 130


@app.command()
def run(
    pipeline: str = typer.Argument(..., help="A pipeline YAML file, or the name of a shipped "
                                   f"one ({', '.join(pipelines.available())})."),
    set_: list[str] = typer.Option([], "--set", help="Override a node field: NODE.FIELD=VALUE."),
    duration: Optional[float] = typer.Option(None, help="Stop after this many seconds."),
    report: Optional[Path] = typer.Option(None, help="Write the JSON report here.",
                                          callback=_output),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live table."),
) -> None:
    """Run a pipeline until --duration passes or Ctrl-C, then print and save its report.

    Exits 1 when a source never appeared, or the run did not do its job (a sink received
    nothing, a node quarantined everything, a node cannot work as configured)."""
    from edgert.runtime.pipeline import Pipeline

    try:
        pipe = Pipeline.from_yaml(pipelines.find(pipeline), set_)
    except PipelineError as e:
        _not_started(report, pipeline, str(e), 2)
    with _starting(report, pipeline):
        try:
            pipe.start()
        except PipelineError as e:
            _not_started(report, pipeline, str(e), 1)
    try:
        run_live(pipe, duration, quiet=quiet)
    finally:
        pipe.stop()
    result = pipe.report()
    result["shortfalls"] = pipe.shortfalls(result)
    _finish(result, report)


@contextmanager
def _starting(report: Optional[Path] = None, pipeline: str = ""):
    """Ctrl-C before the run starts: say so rather than exit silently."""
    try:
        yield
    except KeyboardInterrupt:
        _not_started(report, pipeline, "stopped during start-up (Ctrl-C): nothing ran", 130)


def _not_started(report: Optional[Path], pipeline: str, why: str, code: int) -> None:
    """A run that could not start still leaves its report (`started: false`, and why), so a
    script that reads it learns what went wrong; then the error, and exit `code`."""
    if report is not None:
        _write_json(report, {"pipeline": pipeline, "started": False, "error": why,
                             "shortfalls": [why]})
    _fail(why, code)


def _finish(result: dict, report: Optional[Path], title: str = "") -> None:
    """Print and save the report (a demo's metrics and figures after its table), then exit
    1 if the run fell short (its `shortfalls`)."""
    console.print(report_table(result, title))
    if "metrics" in result:
        console.print({k: round(v, 3) if isinstance(v, float) else v
                       for k, v in result["metrics"].items()})
    for figure in result.get("figures", []):
        console.print(f"figure written to {figure}", soft_wrap=True)
    _write_json(report, result)
    for problem in result["shortfalls"]:
        errors.print(f"[red]error:[/red] {escape(problem)}")
    if interrupted:
        raise typer.Exit(130)
    if result["shortfalls"]:
        raise typer.Exit(1)


def _demo_names() -> str:
    from edgert.runtime.methods import demos

    return ", ".join(["bandpass (the default)", *sorted(demos())])


@app.command()
def demo(
    name: str = typer.Argument("bandpass", help=f"Which demo: {_demo_names()}."),
    duration: Optional[float] = typer.Option(None, help="Seconds to run (default: the "
                                             "demo's own)."),
    report: Optional[Path] = typer.Option(None, help="Write the JSON report here, and the "
                                          "demo's figures beside it.", callback=_output),
) -> None:
    """Run a live demo on simulated sources: no hardware needed."""
    from edgert.runtime.demo import DEMOS
    from edgert.runtime.methods import demos

    available = {**DEMOS, **demos()}
    if name not in available:
        _fail(f"no demo named {name!r}; available: {', '.join(sorted(available))}")
    figures = report.parent if report else Path(tempfile.gettempdir()) / "edgert-demos"
    with _starting(report, f"demo {name}"):
        result = _with_data(lambda: available[name](duration, run_live, figures), None)
    _finish(result, report, f"demo {name}")


def _method(name: str):
    from edgert.runtime.methods import find

    try:
        return find(name)
    except LookupError as e:
        _fail(str(e))


DATA_HELP = ("A recording to read: a file or a folder (repeat it, give several, or a glob). "
             "Its suffix tells its format unless --format says.")


def _recordings(found, given: list[str], fmt: Optional[str], labels: list[str],
                markers: Optional[str] = None):
    """`--data`, `--format`, `--labels` and `--markers` as the method's `Data`, checked
    before any work."""
    from edgert.runtime.plugin import Data

    if not given:
        if fmt or labels or markers:
            _fail("--format, --labels and --markers describe --data; give --data PATH")
        return None
    if not found.formats:
        _fail(f"method {found.name!r} reads no recordings: it trains on its simulator only")
    if fmt is not None and fmt not in found.formats:
        _fail(f"--format {fmt!r}: method {found.name!r} reads {', '.join(found.formats)}")
    paths: list[Path] = []
    for item in given:
        path = Path(item).expanduser()
        found_here = (sorted(map(Path, glob(str(path)))) if any(ch in item for ch in "*?[")
                      else [path] if path.exists() else [])
        if not found_here:
            _fail(f"--data {item}: no such file or folder (or nothing matches the pattern)")
        paths.extend(found_here)
    if markers is not None and not markers.strip():
        _fail("--markers: give the name of the marker stream (`edgert streams` lists them)")
    return Data(tuple(paths), fmt, _labels(labels), markers)


LABELS_HELP = ("CLASS=MARKER[,CLASS=MARKER...]: which marker cues which class. A marker may "
               "hold commas (left=switch,3,0,2,right=switch,3,1,2); `re:` makes it a pattern "
               "the whole marker must match (left='re:switch,\\d+,0,.*'); or give a YAML or "
               "JSON file mapping each class to its marker.")


def _labels(items: list[str]) -> dict[str, str]:
    """Classes and their markers from `--labels`: CLASS=MARKER items (a comma starts a new
    item only where CLASS= follows it, so markers may hold commas), or one mapping file."""
    import yaml

    if len(items) == 1 and Path(items[0]).suffix.lower() in (".yaml", ".yml", ".json"):
        path = Path(items[0]).expanduser()
        try:
            mapping = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            _fail(f"--labels {path}: cannot read it as a mapping file ({e})")
        if not isinstance(mapping, dict) or not mapping or not all(
                isinstance(v, (str, int, float)) for v in mapping.values()):
            _fail(f"--labels {path}: expected a mapping of each class to its marker, e.g. "
                  "`left: switch,3,0,2`")
        return {str(k): str(v) for k, v in mapping.items()}
    pairs = [part for item in items for part in re.split(r",(?=[A-Za-z_][\w.-]*=)", item)
             if part]
    if any("=" not in pair or pair.startswith("=") for pair in pairs):
        _fail(f"--labels {' '.join(items)}: write each as CLASS=MARKER, e.g. "
              "--labels left=cue-left,right=cue-right, or give a mapping file")
    return dict(pair.split("=", 1) for pair in pairs)


def _with_data(call, data):
    """Run a method's train, evaluate or demo; a recording or model it cannot use is the
    user's to fix."""
    from edgert.runtime.plugin import DataError

    try:
        return call() if data is None else call(data=data)
    except DataError as e:
        _fail(str(e))


DATA_CONTEXT = {"allow_extra_args": True}  # `--data *.xdf`: the shell's expansion


def _data_args(ctx: typer.Context, data: list[str]) -> list[str]:
    if ctx.args and not data:
        _fail(f"unexpected argument(s) {' '.join(ctx.args)}; recordings go after --data")
    return data + list(ctx.args)


@app.command(context_settings=DATA_CONTEXT)
def train(
    ctx: typer.Context,
    method: str = typer.Argument(..., help="An installed method."),
    quick: bool = typer.Option(False, "--quick", help="A smaller run: minutes on 2 cores."),
    data: list[str] = typer.Option([], help=DATA_HELP),
    format_: Optional[str] = typer.Option(None, "--format", help="The recordings' format."),
    labels: list[str] = typer.Option([], help=LABELS_HELP),
    markers: Optional[str] = typer.Option(None, help="The marker stream that cues the trials, "
                                          "where a recording has several string streams."),
    out: Optional[Path] = typer.Option(None, help="Checkpoint folder (default: the method's "
                                       "cache; required with --data)."),
) -> None:
    """Train a method's model here (no pretrained weights are downloaded): on its simulator,
    or on your recordings (--data), then export them as a bundle for its pipeline."""
    found = _method(method)
    recorded = _recordings(found, _data_args(ctx, data), format_, labels, markers)
    path = _with_data(lambda **kw: found.train(out, quick, **kw), recorded)
    console.print(f"checkpoint written to {path}", soft_wrap=True)
    if recorded is not None and found.export is not None:
        bundle = found.export(out / "bundle", path).path
        console.print(f"bundle written to {bundle}", soft_wrap=True)
        if found.pipeline:
            console.print(f"run it live: {live_command(found.pipeline, bundle)}", soft_wrap=True)


def live_command(pipeline: str, bundle: Path) -> str:
    """`edgert run` for a bundle: one --set (the last bundle node's) where the bundle carries
    the pipeline's other settings (the recording's cue stream, markers, channels), else one
    per bundle node."""
    nodes = pipelines.bundle_nodes(pipeline)
    manifest = json.loads((Path(bundle) / "manifest.json").read_text())
    carried = ((manifest.get("preprocessing") or {}).get("pipeline") or {}).get(pipeline, {})
    if all(f"{n}.bundle" in carried for n in nodes[:-1]):
        nodes = nodes[-1:]
    return f"edgert run {pipeline} " + " ".join(f"--set {n}.bundle={bundle}" for n in nodes)


@app.command(context_settings=DATA_CONTEXT)
def evaluate(
    ctx: typer.Context,
    method: str = typer.Argument(..., help="An installed method."),
    quick: bool = typer.Option(False, "--quick", help="A smaller run: minutes on 2 cores."),
    data: list[str] = typer.Option([], help=DATA_HELP + " The method's protocol runs on "
                                   "them (BTTA-DG: leave one recording out)."),
    format_: Optional[str] = typer.Option(None, "--format", help="The recordings' format."),
    labels: list[str] = typer.Option([], help="CLASS=MARKER[,...], as for train."),
    markers: Optional[str] = typer.Option(None, help="The cue marker stream, as for train."),
    out: Optional[Path] = typer.Option(None, help="Write the JSON results here, and the "
                                       "figures beside them.", callback=_output),
) -> None:
    """Evaluate a method against its baselines and ablations; print them, save the JSON, then
    draw its figures beside it."""
    from edgert.cli.console import gaps_table, results_table

    found = _method(method)
    recorded = _recordings(found, _data_args(ctx, data), format_, labels, markers)
    result = _with_data(lambda **kw: found.evaluate(quick, **kw), recorded)
    console.print(results_table(result))
    for key in ("gaps", "widening"):
        if (leads := gaps_table(result, key)) is not None:
            console.print(leads)
    _write_json(out, result, found.figures)


@app.command()
def batch(
    job: str = typer.Argument(..., help="An installed batch method, or 'package.module:JOB'."),
    out: Path = typer.Option(..., help="Results folder (results.json, summary.md, cells/)."),
    config: Optional[Path] = typer.Option(None, help="YAML/JSON: one config, a list, or "
                                          "{configs: [...]} (default: the job's own grid)."),
    seeds: int = typer.Option(3, min=1, help="Seeds per config."),
    engine: str = typer.Option("local", help="local (process pool) or ray."),
    address: Optional[str] = typer.Option(None, help="Ray cluster address (ray engine)."),
    workers: Optional[int] = typer.Option(None, help="Processes or Ray CPUs (default: all)."),
    quick: bool = typer.Option(False, "--quick", help="The job's quick grid: minutes on 2 "
                               "cores."),
) -> None:
    """Run a batch job's (config, seed) grid; finished cells are kept and skipped on a rerun."""
    from edgert.runtime.progress import progress_bar
    from rich.table import Table

    from edgert.runtime.batch import cells_for, load_configs, pending, run_batch

    if engine not in ("local", "ray"):
        _fail(f"engine must be local or ray, got {engine!r}")
    method = _method(job)
    if getattr(method, "run", None) is None or getattr(method, "kind", "batch") != "batch":
        _fail(f"{job!r} is not a batch job (it has no run(config, seed, out_dir))")
    try:
        configs = load_configs(method, config, quick)
    except (ValueError, FileNotFoundError) as e:
        _fail(str(e))
    todo, done = pending(cells_for(job, configs, seeds), out)
    console.print(f"{job}: {len(configs)} config(s) x {seeds} seed(s); {len(done)} done "
                  f"already, {len(todo)} to run on {engine}")
    with progress_bar(console=console) as progress:
        task = progress.add_task("cells", total=len(todo))
        result = run_batch(job, configs, seeds, out, engine, address,
                           on_done=lambda _: progress.advance(task), workers=workers)
    table = Table(title=f"{job} (mean ± se over seeds)", title_justify="left")
    for col in ("config", "metric", "mean", "± se", "n"):
        table.add_column(col)
    for h, entry in result["summary"].items():
        for m, st in entry["metrics"].items():
            table.add_row(h, m, f"{st['mean']:.4g}", f"{st['se']:.2g}", str(st["n"]))
    console.print(table)
    for failed in result["failed"]:
        console.print(f"[red]failed[/red] {failed['key']}:\n{escape(failed['error'])}")
    console.print(f"results in {out / 'results.json'} and {out / 'summary.md'}", soft_wrap=True)
    if getattr(method, "figures", None) and result["summary"]:
        for path in method.figures(result, out):
            console.print(f"figure: {path}", soft_wrap=True)
    if result["failed"]:
        raise typer.Exit(1)


@app.command()
def streams(
    timeout: float = typer.Option(1.0, help="Seconds to wait for streams to answer."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the LSL streams visible from this machine."""
    from rich.table import Table

    from edgert.streams.lsl import list_streams

    found = list_streams(timeout)
    if as_json:
        print(json.dumps([{"name": s.name, "type": s.type, "channels": s.n_channels,
                           "rate": s.rate, "dtype": s.dtype, "source_id": s.source_id}
                          for s in found], indent=2))
        return
    table = Table(title=f"{len(found)} LSL stream(s)", title_justify="left")
    for col in ("name", "type", "channels", "rate", "dtype", "source_id"):
        table.add_column(col)
    for s in found:
        table.add_row(s.name, s.type, str(s.n_channels), f"{s.rate:g}", s.dtype, s.source_id)
    console.print(table)


@app.command()
def record(
    out: Path = typer.Argument(..., help="The XDF file to write."),
    stream: list[str] = typer.Option([], "--stream", "-s", help="Stream name to record "
                                     "(repeat for more); default: every visible stream."),
    duration: Optional[float] = typer.Option(None, help="Stop after this many seconds."),
) -> None:
    """Record LSL streams to XDF as LabRecorder does (raw timestamps plus clock offsets)."""
    from edgert.streams.lsl import list_streams
    from edgert.streams.recorder import Recorder

    names = stream or sorted({s.name for s in list_streams(2.0)})
    if not names:
        _fail("no LSL streams found; start a source first (see `edgert streams`)")
    try:
        recorder = Recorder(out, names)
        recorder.start()
    except LookupError as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"cannot write {out}: {e.strerror}; choose another file")
    end = None if duration is None else time.monotonic() + duration
    global interrupted
    try:
        with Live(console=console, refresh_per_second=2) as live:
            while end is None or time.monotonic() < end:
                time.sleep(0.5)
                live.update(f"recording {out}: " + ", ".join(
                    f"{name} {n} samples" for name, n in recorder.counts.items()))
    except KeyboardInterrupt:
        pass
    finally:
        recorder.stop()
    console.print(f"wrote {out}: " + ", ".join(f"{k} {v} samples"
                                              for k, v in recorder.counts.items()),
                  soft_wrap=True)


@app.command()
def replay(
    file: Path = typer.Argument(..., help="An XDF file."),
    speed: float = typer.Option(1.0, help="Playback speed; inf for as fast as possible."),
    loop: bool = typer.Option(False, help="Start again at the end."),
    chunk: int = typer.Option(16, help="Samples per chunk for regular streams."),
    jitter: bool = typer.Option(False, help="Seeded random chunk sizes, like real amplifiers."),
    seed: int = typer.Option(0),
    zmq: Optional[str] = typer.Option(None, help="Publish on this ZeroMQ endpoint (PUB, "
                                      "bound) instead of LSL outlets."),
) -> None:
    """Play every stream of an XDF file live, keeping the original spacing."""
    from edgert.runtime.progress import progress_bar

    from edgert.streams.lsl import Outlet
    from edgert.streams.replay import Replay
    from edgert.streams.zmq_link import Publisher

    make_sink = Outlet
    if zmq is not None:
        publisher = Publisher(zmq)
        console.print(f"publishing on {publisher.endpoint}")
        make_sink = lambda info: publisher  # noqa: E731
    try:
        player = Replay.from_xdf(file, make_sink=make_sink, speed=speed, chunk_size=chunk,
                                 loop=loop, seed=seed, jitter=jitter)
    except (FileNotFoundError, ValueError) as e:
        _fail(str(e))
    for r in player.recordings:
        console.print(f"  {r.info.name} [{r.info.type}] {r.info.n_channels} ch "
                      f"{r.info.rate:g} Hz, {len(r)} samples")
    total = sum(len(r) for r in player.recordings)
    player.start()
    try:
        with progress_bar(console=console) as progress:
            task = progress.add_task(f"replaying {file.name} (samples)",
                                     total=None if loop else total)
            while not player.wait(0.2):
                progress.update(task, completed=sum(player.pushed.values()))
            progress.update(task, completed=total)
    except KeyboardInterrupt:
        pass
    finally:
        player.stop()
    console.print("pushed " + ", ".join(f"{k} {v}" for k, v in player.pushed.items()))


@app.command("export")
def export_(
    method: str = typer.Argument(..., help="An installed method, 'reference' (a small EEG "
                                 "decoder), or a 'package.module:function' exporter."),
    out: Path = typer.Option(..., help="The bundle folder to write."),
    checkpoint: Optional[Path] = typer.Option(None, help="Weights to export (default: the "
                                              "method's own)."),
    fp16: bool = typer.Option(False, "--fp16", help="Add an fp16 variant."),
    int8: bool = typer.Option(False, "--int8", help="Add an int8 (dynamic) variant."),
) -> None:
    """Export a model to a bundle: ONNX, torch file, manifest, parity measured."""
    from edgert.export.bundle import ExportError
    from edgert.runtime.methods import find

    try:
        exporter = find("edgert.export.reference:export_reference" if method == "reference" else method)
    except LookupError as e:
        _fail(str(e))
    exporter = getattr(exporter, "export", exporter)
    try:
        bundle = exporter(out=out, checkpoint=checkpoint, fp16=fp16, int8=int8)
    except (ExportError, ValueError, FileNotFoundError) as e:
        _fail(str(e))
    m = bundle.manifest
    console.print(f"bundle {m.name!r} written to {bundle.path}", soft_wrap=True)
    for name, v in m.variants.items():
        flags = f" [yellow]flagged: {'; '.join(v.flagged)}[/yellow]" if v.flagged else ""
        ratio = f", {v.latency_ratio:.2f}x fp32 latency" if v.latency_ratio else ""
        console.print(f"  {name}: {v.file}{ratio}{flags}")
    for kind, p in m.parity.items():
        console.print(f"  parity ({kind}): max abs {p.max_abs:.2e}, max rel {p.max_rel:.2e} "
                      f"over {p.samples} samples (tolerance {p.tolerance:g})")


@app.command()
def keys(
    folder: Path = typer.Argument(..., help="Where to write the pair."),
    name: str = typer.Option("edgert", help="The pair's name: NAME.key and NAME.key_secret."),
) -> None:
    """Make a ZeroMQ CURVE key pair for an endpoint reachable from other machines."""
    from edgert.streams.zmq_security import make_keys

    for path in (folder / f"{name}.key", folder / f"{name}.key_secret"):
        if path.exists():
            _fail(f"{path} exists; choose another --name or folder (a key is never overwritten)")
    try:
        public, secret = make_keys(folder, name)
    except OSError as e:
        _fail(f"cannot write keys into {folder}: {e.strerror}")
    console.print(f"public key written to {public} (hand it out)\n"
                  f"secret key written to {secret} (keep it; only this end reads it)\n"
                  "server: params keys: NAME.key_secret, clients: a folder of the clients' "
                  "NAME.key\nclient: params keys: NAME.key_secret, server_key: the server's "
                  "NAME.key", soft_wrap=True)


@app.command()
def verify(bundle: Path = typer.Argument(..., help="A bundle folder.")) -> None:
    """Check a bundle: hashes, opset, loads in ONNX Runtime, parity re-run."""
    from edgert.export.bundle import BundleError
    from edgert.export.verify import verify as check

    try:
        result = check(bundle)
    except BundleError as e:
        _fail(str(e))
    console.print_json(json.dumps(result))
    console.print(f"[green]{bundle}: ok[/green]")


@app.command()
def doctor(
    pipeline: Optional[str] = typer.Argument(None, help="Also say what this pipeline (a YAML "
                                             "file or a shipped name) will listen on."),
    set_: list[str] = typer.Option([], "--set", help="Override a node field: NODE.FIELD=VALUE."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Say what this machine can run and how to fix what it cannot; exit 1 on a fault."""
    from rich.table import Table

    from edgert.runtime import spec as specs
    from edgert.cli.doctor import checks, listeners, machine

    found = checks()
    if pipeline is not None:
        try:
            found += listeners(specs.load(pipelines.find(pipeline), set_))
        except (PipelineError, ValueError) as e:
            _fail(str(e))
    if as_json:
        print(json.dumps([f.to_dict() for f in found], indent=2))
    else:
        table = Table(title=f"edgert doctor: {machine()}", title_justify="left")
        for col in ("check", "", "what was found", "fix"):
            table.add_column(col, overflow="fold")
        marks = {"ok": "[green]ok[/green]", "note": "[yellow]note[/yellow]",
                 "fault": "[red]FAULT[/red]"}
        for f in found:
            table.add_row(f.area, marks[f.status], escape(f.detail), escape(f.fix))
        console.print(table)
    if any(f.status == "fault" for f in found):
        raise typer.Exit(1)


@app.command()
def devices(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Say what this machine is and which device profile applies."""
    from edgert.devices.detect import detect
    from edgert.devices.profile import load_profile

    found = detect()
    payload = found.to_dict()
    payload["profile_settings"] = load_profile(found.profile).model_dump()
    if as_json:
        print(json.dumps(payload, indent=2))
        return
    console.print(f"profile: [bold]{found.profile}[/bold]")
    for reason in found.reasons:
        console.print(f"  - {reason}")
    console.print_json(json.dumps(payload["profile_settings"]))


@app.command("bench-model")
def bench_model_(
    bundle: Path = typer.Argument(..., help="A bundle folder."),
    backends: str = typer.Option("ort-cpu,torch", help="Comma-separated: ort-cpu, ort-cuda, "
                                 "ort-trt, trt, torch, torch-cuda."),
    scenario: str = typer.Option("single-stream", help="single-stream or offline."),
    variant: str = typer.Option("fp32", help="fp32, fp16 or int8 (ONNX Runtime backends)."),
    queries: int = typer.Option(300, help="Timed queries after warm-up."),
    warmup: int = typer.Option(30, help="Untimed queries first."),
    threads: int = typer.Option(1, help="Intra-op threads."),
    profile: Optional[str] = typer.Option(None, help="Refuse if peak memory exceeds this "
                                          "device profile's budget."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Latency (single-stream) or throughput (offline) of a bundle on each backend."""
    from edgert.devices.placement import PlacementError
    from edgert.export.bundle import BundleError
    from edgert.benchmarks.model import bench_model

    if scenario not in ("single-stream", "offline"):
        _fail(f"--scenario {scenario!r}: choose single-stream or offline")
    try:
        result = bench_model(str(bundle), [b.strip() for b in backends.split(",") if b.strip()],
                             scenario, queries, warmup, variant, threads, profile=profile)
    except (BundleError, PlacementError, ValueError) as e:
        _fail(str(e))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    from rich.table import Table

    table = Table(title=f"{result['bundle']} {variant}, {scenario}", title_justify="left")
    cols = ("p50_ms", "p90_ms", "p99_ms") if scenario == "single-stream" else ("samples_per_s",)
    for col in ("backend", "provider", *cols, "peak_memory_mb", "note"):
        table.add_column(col)
    for kind, r in result["results"].items():
        if "skipped" in r:
            table.add_row(kind, "", *("" for _ in cols), "", escape(r["skipped"]))
            continue
        table.add_row(kind, r["provider"], *(f"{r[c]:.3f}" for c in cols),
                      f"{r['peak_memory_mb']:.1f}", "")
    console.print(table)


@app.command()
def bench(
    args: Optional[list[str]] = typer.Argument(
        None, metavar="SUITE",
        help="Suites to run: transport, inference, pipelines, scenarios (default: all); "
        "or: compare OLD.json NEW.json."),
    quick: bool = typer.Option(False, "--quick", help="Short runs (minutes on 2 cores), "
                               "same code path."),
    out: Optional[Path] = typer.Option(None, help="Folder for results.json, report.md and "
                                       "plots (required to run suites)."),
    bundle: list[Path] = typer.Option([], "--bundle", help="inference: a bundle to measure "
                                      "(repeat for more); default: the reference bundle and every live "
                                      "method's model on this machine."),
    threshold: float = typer.Option(0.1, help="compare: tolerated change, as a fraction."),
) -> None:
    """Run latency benchmarks, or compare two runs.

    edgert bench [SUITE ...] [--quick] --out DIR   writes results.json, report.md and plots.

    edgert bench compare OLD.json NEW.json [--threshold 0.1]   prints NEW/OLD per figure.

    compare exits 1 when a latency rose, or a throughput fell, by more than the threshold.
    """
    args = args or []
    if args[:1] == ["compare"]:
        if len(args) != 3:
            _fail("usage: edgert bench compare OLD.json NEW.json [--threshold 0.1]")
        _bench_compare(Path(args[1]), Path(args[2]), threshold)
        return
    from edgert.benchmarks.suite import SUITES, run_bench

    if out is None:
        _fail("--out DIR is required to run suites (or use: edgert bench compare OLD NEW)")
    unknown = [a for a in args if a not in SUITES]
    if unknown:
        _fail(f"unknown suite(s) {unknown}; choose from {', '.join(SUITES)}, or `compare`")
    started = time.monotonic()
    results = run_bench(args or list(SUITES), quick, out, bundle or None, console)
    console.print(f"results: {out / 'results.json'}\nreport:  {out / 'report.md'} "
                  f"({time.monotonic() - started:.0f} s)")
    if results["failed"]:
        _fail(f"suite(s) failed: {', '.join(results['failed'])} (see the log above)")


def _bench_compare(old: Path, new: Path, threshold: float) -> None:
    from rich.table import Table

    from edgert.benchmarks.compare import compare_files

    try:
        rows = compare_files(old, new, threshold)
    except ValueError as e:
        _fail(str(e))
    table = Table(title=f"{new} / {old} (threshold {threshold:g})", title_justify="left")
    table.add_column("figure", overflow="fold")
    for col in ("kind", "old", "new", "new/old", ""):
        table.add_column(col, justify="left" if col in ("kind", "") else "right")
    for r in rows:
        table.add_row(r.figure, r.kind, f"{r.old:.4g}", f"{r.new:.4g}",
                      "" if r.ratio is None else f"{r.ratio:.3f}",
                      "[red]REGRESSION[/red]" if r.regression else "")
    wide = console if console.is_terminal else Console(width=160)  # CI logs: whole names
    wide.print(table)
    regressions = sum(r.regression for r in rows)
    console.print(f"{len(rows)} figures compared, {regressions} regression(s)")
    if not rows:
        _fail(f"{old} and {new} share no latency or throughput figures")
    if regressions:
        raise typer.Exit(1)


if __name__ == "__main__":
    app()
