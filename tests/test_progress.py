"""Long work is never silent in a log: where output is not a terminal, progress comes as plain
lines on stderr, one when a task starts and ends and one every few seconds in between."""
import subprocess
import sys
import textwrap
import threading
import time


def test_piped_progress_prints_plain_lines_with_what_how_far_and_time_left():
    code = textwrap.dedent("""
        import time
        from edgert.runtime import progress
        progress.EVERY_S = 0.3
        with progress.progress_bar() as bar:
            task = bar.add_task("training the decoder", total=4)
            for _ in range(4):
                time.sleep(0.4)
                bar.advance(task)
            slow = bar.add_task("one slow step", total=1)
            time.sleep(1.0)
            bar.update(slow, completed=1)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "training the decoder: 0/4 (0%), 0 s"
    assert any("about" in line and "s left" in line for line in lines)
    assert "training the decoder: 4/4 (100%)" in out.stderr
    slow = [line for line in lines if line.startswith("one slow step")]
    assert len(slow) >= 3, lines  # started, at least one timed line while it ran, done
    assert "\x1b[" not in out.stderr  # no terminal control codes in a log


def test_a_silent_step_gets_a_still_working_line_when_piped():
    code = textwrap.dedent("""
        import time
        from edgert.runtime import progress
        progress.SILENCE_S = 1.0
        progress.Heartbeat("edgert evaluate").install()
        print("started", flush=True)
        time.sleep(2.6)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "started\n"
    beats = [line for line in out.stderr.splitlines() if "still working" in line]
    assert 1 <= len(beats) <= 3 and beats[0].startswith("edgert evaluate: still working, ")


def test_a_command_run_in_process_stops_its_heartbeat_when_it_ends():
    from typer.testing import CliRunner

    from edgert.cli.commands import app

    before = threading.active_count()
    for _ in range(3):
        assert CliRunner().invoke(app, ["streams", "--json", "--timeout", "0.1"]).exit_code == 0
    assert type(sys.stderr).__name__ != "_Watched"
    deadline = time.monotonic() + 3
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert threading.active_count() <= before
