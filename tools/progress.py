"""Progress on a terminal, silence in pipes: a one-line phase display with a running clock
(convert, verify) and a bar over many items (batch). Both draw on stderr only when it is a
terminal and --quiet was not given, and erase themselves when done."""

from __future__ import annotations

import sys
import threading
import time
from typing import Optional, TextIO


def wanted(quiet: bool = False, stream: Optional[TextIO] = None) -> bool:
    stream = stream or sys.stderr
    return not quiet and hasattr(stream, "isatty") and stream.isatty()


class PhaseLine:
    """`with PhaseLine(enabled) as line: line.phase("mapping 1831 nodes")` shows
    'tf2ir: mapping 1831 nodes  3.2 s' redrawn every `interval` seconds by a daemon thread."""

    def __init__(self, enabled: bool, stream: Optional[TextIO] = None, interval: float = 0.2):
        self.enabled, self.stream, self.interval = enabled, stream or sys.stderr, interval
        self._text, self._start, self._width = "", time.perf_counter(), 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> "PhaseLine":
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="tf2ir-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def phase(self, text: str) -> None:
        with self._lock:
            self._text, self._start = text, time.perf_counter()
        self._draw()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if not self._text:
                return
            line = f"tf2ir: {self._text}  {time.perf_counter() - self._start:.1f} s"
            pad = max(self._width - len(line), 0)
            self._width = len(line)
            self.stream.write("\r" + line + " " * pad)
            self.stream.flush()

    def close(self) -> None:
        """Stop the clock and erase the line (what follows prints on a clean line)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self.enabled and self._width:
            with self._lock:
                self.stream.write("\r" + " " * self._width + "\r")
                self.stream.flush()
                self._width = 0


class ProgressBar:
    """A one-line bar over `total` items, redrawn in place."""

    def __init__(self, total: int, enabled: bool, width: int = 30, stream: Optional[TextIO] = None):
        self.total, self.done, self.failed = total, 0, 0
        self.enabled, self.width = enabled and total > 0, width
        self.stream = stream or sys.stderr

    def update(self, name: str, failed: bool = False) -> None:
        self.done += 1
        self.failed += bool(failed)
        if self.enabled:
            filled = self.width * self.done // self.total
            name = name if len(name) <= 40 else "..." + name[-37:]
            self.stream.write(f"\r[{'#' * filled}{'.' * (self.width - filled)}] "
                              f"{self.done}/{self.total} failed {self.failed}  {name:<40}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
