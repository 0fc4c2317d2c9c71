"""The command line's manners: --version, a closed pipe ends the output quietly, help lines
say what each command takes, and the shell can complete subcommands and options."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import run_cli

CLI = [sys.executable, "-m", "tf2ir.tools.cli"]


def test_version():
    from tf2ir import __version__
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"tf2ir {__version__}"


def test_a_closed_pipe_ends_the_output_quietly():
    listing = subprocess.Popen(CLI + ["plugins"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = listing.stdout.readline()      # the reader takes one line and goes
    listing.stdout.close()
    _, stderr = listing.communicate()
    assert first.startswith(b"ORIGIN OP TYPE")
    assert listing.returncode == 0 and stderr == b"", stderr


def test_help_says_what_each_command_takes():
    text = run_cli("--help").stdout
    assert "SavedModel directory" in text and "Keras .keras/.h5" in text
    assert "frozen TF graph (.pb/.pbtxt) to ONNX" not in text
    for command in ("convert", "verify", "check"):
        assert "SavedModel" in run_cli(command, "--help").stdout, command


def _complete(line: str, tmp_path) -> list:
    out = tmp_path / "completions"
    env = {**os.environ, "_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)),
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    with open(os.devnull, "w") as devnull:   # argcomplete also writes to fds 8 and 9
        result = subprocess.run(CLI, env=env, stdout=devnull, stderr=devnull,
                                pass_fds=(), timeout=60)
    assert result.returncode == 0
    return out.read_text().split()


def test_shell_completion_of_subcommands_and_options(tmp_path):
    assert _complete("tf2ir con", tmp_path) == ["convert"]
    assert "--fallback" in _complete("tf2ir convert model.pb --fa", tmp_path)
    assert set(_complete("tf2ir ", tmp_path)) >= {"convert", "check", "verify", "run", "batch"}
