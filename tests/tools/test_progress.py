"""Progress display: drawn on a terminal, erased when done, silent in pipes and with --quiet."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

from tests.conftest import run_cli
from tf2ir.tools.progress import PhaseLine, wanted

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_phase_line_draws_and_erases():
    stream = Tty()
    with PhaseLine(True, stream=stream, interval=0.01) as line:
        line.phase("mapping 12 nodes")
    text = stream.getvalue()
    assert "\rtf2ir: mapping 12 nodes  0.0 s" in text
    assert text.endswith("\r")        # erased: the next line starts clean


def test_wanted_only_on_a_terminal_and_not_quiet():
    assert wanted(False, Tty()) and not wanted(True, Tty())
    assert not wanted(False, io.StringIO())
    stream = io.StringIO()
    with PhaseLine(wanted(False, stream), stream=stream) as line:
        line.phase("anything")
    assert stream.getvalue() == ""


def test_convert_in_a_pipe_prints_nothing(tmp_path):
    result = run_cli("convert", SAMPLE, "-o", str(tmp_path / "m.onnx"))
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def _run_on_a_terminal(*args):
    """Run the CLI with stderr on a pseudo-terminal; return (exit status, what it drew)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "tf2ir.tools.cli", *args],
                               stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:       # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(), b"".join(chunks).decode()


def test_convert_on_a_terminal_shows_phases_and_quiet_hides_them(tmp_path):
    status, drawn = _run_on_a_terminal("convert", SAMPLE, "-o", str(tmp_path / "m.onnx"))
    assert status == 0
    assert "tf2ir: converting sample_cnn.pb" in drawn and "IR nodes" in drawn
    status, drawn = _run_on_a_terminal("convert", SAMPLE, "-o", str(tmp_path / "q.onnx"), "--quiet")
    assert status == 0 and drawn == ""
