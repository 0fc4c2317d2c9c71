"""Measuring a child process: its wall time and its own peak memory (bench and zoo)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from typing import List


@dataclass
class Measure:
    seconds: float
    peak_mb: float
    ok: bool
    error: str = ""


def run_measured(cmd: List[str]) -> Measure:
    """Run `cmd` as a child process: wall seconds and its own peak RSS (os.wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = "" if proc.returncode == 0 else stderr.decode(errors="replace").strip().splitlines()[-1:]
    return Measure(seconds, usage.ru_maxrss / 1024.0, proc.returncode == 0,
                   error[0] if error else "")
