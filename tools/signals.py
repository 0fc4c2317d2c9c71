"""Signals for the command line (DESIGN decision 10): SIGINT, SIGTERM and SIGHUP end a run
with one line and the exit status 128 + the signal's number (130, 143, 129), after the
temporary files being written are removed; never a traceback.

The handlers raise `Interrupted`, so the run unwinds as for any error (every writer's
`atomic_output` removes its temporary on the way out) and the command line catches it at
the top. `Interrupted` is a BaseException other than KeyboardInterrupt: the places that call
plugin code turn a KeyboardInterrupt or SystemExit that a plugin raises into a plugin
failure, but let a real signal through.

Two safety nets: an `Interrupted` raised where Python cannot propagate it (in a `__del__`
or a weakref callback) is not printed, and the run reports the signal when it ends
(`received`); and if the run has not ended `FORCE_AFTER_S` seconds after the signal (stuck
in a long native call), a watchdog thread removes the temporaries, prints the line and
exits.

One place must not raise at all: onnxruntime calling a plugin's Python kernel, where an
exception crossing its C++ frames aborts the process (exit 134). The runtime session holds
the handlers there (ir/onnx/guard.py `held_signals`): it calls `_raise.on_held` (`_note`:
the signal is recorded and the watchdog started at once, so a kernel that never returns
still ends the run) and calls `_raise` itself when onnxruntime has returned. This module imports only the standard library, so that the command line installs
its handlers before any heavy import.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Callable, Dict, Optional, Union

HANDLED = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())
FORCE_AFTER_S = 10.0
_Handler = Union[Callable, int, None]


class Interrupted(BaseException):
    """A run ended by a signal (SIGINT, SIGTERM, SIGHUP)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    def __str__(self) -> str:
        return f"interrupted by {self.name}"


_LOCK = threading.Lock()


class _State:
    received: Optional[int] = None        # the first signal of this run
    reported = threading.Event()          # set once the run has printed its line
    prog = "tf2ir"
    depth = 0                             # runs installed and not restored (nesting)
    previous_hook: Optional[Callable] = None


def _note(signum) -> None:
    """Record the run's first signal and start the watchdog (no exception)."""
    if _State.received is None:
        _State.received = signum
        threading.Thread(target=_force_exit, args=(signum,), name="tf2ir-signal-watchdog",
                         daemon=True).start()


def _raise(signum, frame) -> None:
    # The first signal ends the run; the others are ignored while it cleans up.
    for other in HANDLED:
        signal.signal(other, signal.SIG_IGN)
    _note(signum)
    raise Interrupted(signum)


_raise.on_held = _note   # type: ignore[attr-defined]   # see the module docstring


def _force_exit(signum: int) -> None:
    if not _State.reported.wait(FORCE_AFTER_S):
        report(Interrupted(signum))
        os._exit(128 + signum)


def _unraisable(info) -> None:
    if isinstance(info.exc_value, Interrupted):
        return       # raised in a __del__ or callback: `received` still tells the run
    (_State.previous_hook or sys.__unraisablehook__)(info)


def install(signals=HANDLED, prog: str = "tf2ir") -> Dict[int, _Handler]:
    """Make `signals` raise `Interrupted`; return the handlers they had (for `restore`).
    Only the main thread can install handlers: elsewhere this does nothing."""
    previous: Dict[int, _Handler] = {}
    try:
        for signum in signals:
            previous[signum] = signal.signal(signum, _raise)
    except ValueError:    # not the main thread
        restore(previous)
        return {}
    if _State.depth == 0:           # not nested in another run: a new run
        _State.received, _State.prog = None, prog
        _State.reported = threading.Event()
    _State.depth += 1
    if sys.unraisablehook is not _unraisable:
        _State.previous_hook = sys.unraisablehook
        sys.unraisablehook = _unraisable
    return previous


def restore(previous: Dict[int, _Handler]) -> None:
    """Put back the handlers `install` replaced (a run called from Python)."""
    for signum, handler in previous.items():
        signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    if not previous:
        return
    _State.depth -= 1
    if _State.depth > 0:
        return                      # a nested run: the outer one goes on
    if sys.unraisablehook is _unraisable:
        sys.unraisablehook = _State.previous_hook or sys.__unraisablehook__
    _State.reported.set()           # no watchdog outlives the run
    _State.received = None


def received() -> Optional[Interrupted]:
    """The signal this run received, if any (for a run that did not see it raised)."""
    return Interrupted(_State.received) if _State.received is not None else None


def clean_up() -> None:
    """Remove the temporaries still being written (the writers remove their own while the
    run unwinds; this catches any left). Nothing to do when no writer was ever imported."""
    atomic = sys.modules.get("tf2ir.ir.atomic")
    if atomic is not None:
        atomic.remove_temporaries()


def report(exc: Interrupted, stream=None) -> int:
    """Clean up, print the one line (once) and return the exit status for `exc`."""
    clean_up()
    with _LOCK:
        if not _State.reported.is_set():
            _State.reported.set()
            try:
                print(f"{_State.prog}: {exc}", file=stream or sys.stderr, flush=True)
            except (OSError, ValueError):   # stderr closed (a hung-up terminal)
                pass
    return exc.exit_code


def ignore_interrupts() -> Optional[_Handler]:
    """Ignore SIGINT (a batch worker: Ctrl-C reaches the whole process group, and the
    parent stops its workers itself)."""
    return signal.signal(signal.SIGINT, signal.SIG_IGN)
