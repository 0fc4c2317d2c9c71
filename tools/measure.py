"""Measuring a child process: its wall time and its own peak memory (bench and zoo)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import List, Optional, Sequence


@dataclass
class Measure:
    seconds: float
    peak_mb: float
    ok: bool
    error: str = ""
    cpu_seconds: float = 0.0   # user + system: steadier than the wall on a busy machine


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
                   error[0] if error else "", usage.ru_utime + usage.ru_stime)


def repeat_measured(commands: Sequence[List[str]], runs: int) -> List[List[Measure]]:
    """Each command run `runs` times, interleaved (a busy machine slows all alike)."""
    results: List[List[Measure]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            results[i].append(run_measured(cmd))
    return results


def main(argv: Optional[Sequence[str]] = None) -> int:
    """python -m tf2ir.tools.measure [-n RUNS] -- CMD [ARGS] [--- CMD2 ...]: each command's
    median and least wall time and peak memory over RUNS interleaved runs."""
    import argparse
    import shlex
    import statistics
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.measure",
                                     description=main.__doc__.split(":")[0] if main.__doc__ else "")
    parser.add_argument("-n", "--runs", type=int, default=10)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command; several are separated by ---")
    args = parser.parse_args(argv)
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    commands: List[List[str]] = [[]]
    for word in words:
        if word == "---":
            commands.append([])
        else:
            commands[-1].append(word)
    commands = [c for c in commands if c]
    if not commands:
        parser.error("no command given")
    for cmd, measures in zip(commands, repeat_measured(commands, args.runs)):
        failed = [m for m in measures if not m.ok]
        seconds = [m.seconds for m in measures]
        peaks = [m.peak_mb for m in measures]
        cpu = [m.cpu_seconds for m in measures]
        print(f"wall median {statistics.median(seconds):.3f} s  min {min(seconds):.3f} s  "
              f"cpu median {statistics.median(cpu):.3f} s  min {min(cpu):.3f} s  "
              f"peak median {statistics.median(peaks):.1f} MB  max {max(peaks):.1f} MB"
              f"{f'  ({len(failed)} failed: {failed[0].error})' if failed else ''}  "
              f"{shlex.join(cmd)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
