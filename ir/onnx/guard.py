"""What keeps onnxruntime standing while it runs Python bodies (ir/onnx/runtime.py): no
exception may cross its C++ frames, where it aborts the process (a pybind11 `terminate`).

- `checked`: a body's input or result against what the model declares (kind of dtype,
  rank, static dims); a string result must hold str or bytes only (anything else aborts in
  onnxruntime-extensions' conversion). A disagreement is a `Mismatch`, which the body
  records as its failure.
- `stand_ins`: the empty outputs a failed or skipped body returns instead.
- `held_signals`: SIGINT, SIGTERM and SIGHUP handlers held while onnxruntime may call
  Python bodies (a handler that raises there would abort), run when it has returned.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))
SIGNALLED: List[int] = []              # signals held during the current run
HOLDING = [False]                      # the main thread is inside `held_signals`


@contextlib.contextmanager
def held_signals(active: bool = True):
    """Hold SIGINT, SIGTERM and SIGHUP while onnxruntime may call Python bodies: a Python
    handler would raise inside them, through onnxruntime's C++ frames (an abort). A signal
    is recorded (the bodies still to come are skipped), the handler's `on_held(signum)` is
    called at once if it has one (tools/signals.py starts its watchdog), and the handler
    itself runs when the block ends. Only the main thread runs handlers; only handlers that
    are Python functions are held (SIG_DFL ends the process as it always does)."""
    if not active or HOLDING[0] or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Dict[int, Callable] = {}

    def hold(signum, frame):
        SIGNALLED.append(signum)
        on_held = getattr(previous.get(signum), "on_held", None)
        if on_held is not None:
            on_held(signum)
    HOLDING[0] = True
    try:
        for signum in SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler):
                previous[signum] = handler
                signal.signal(signum, hold)
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        HOLDING[0] = False
        held = SIGNALLED[0] if SIGNALLED else None
        del SIGNALLED[:]
        if held is not None and held in previous:
            previous[held](held, None)   # raises here, outside onnxruntime


class Mismatch(Exception):
    """What a body was given or returned disagrees with what the model declares."""


def stand_ins(dtypes: Sequence[np.dtype]):
    """Empty outputs that stand in for the results of a kernel that failed or was skipped."""
    cast = tuple(np.zeros((0,), t) for t in dtypes)
    return cast if len(cast) > 1 else cast[0]


def first_line(exc: BaseException) -> str:
    """The first line of what `exc` says."""
    return (str(exc).strip().splitlines() or [""])[0]


def dims(shape: Sequence[Optional[int]]) -> str:
    """(7, None) → "[7, ?]"."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def checked(array, dtype: np.dtype, declared, what: str, cast: bool = True) -> np.ndarray:
    """`array` (as `dtype` if `cast`), if its kind and shape agree with the declared ones."""
    if array is None:
        raise Mismatch(f"{what} is None")
    value = np.asarray(array)
    if dtype == object:   # onnxruntime-extensions takes str and bytes (others: an abort)
        agrees = value.dtype.kind in "US" or value.dtype.kind == "O" and all(
            isinstance(v, (str, bytes)) for v in value.flat)
    else:
        agrees = value.dtype.kind not in "OUSVMm" and (
            np.can_cast(value.dtype, dtype, "same_kind")
            or value.dtype.kind in "iu" and dtype.kind in "iu")
    if not agrees:
        kind = next((type(v).__name__ for v in value.flat if not isinstance(v, (str, bytes))),
                     None) if value.dtype == object else None
        raise Mismatch(f"{what} is {value.dtype}" + (f" holding {kind}" if kind else "")
                       + f", which the model declares {'string' if dtype == object else dtype}")
    if declared is not None and (len(declared) != value.ndim or any(
            d is not None and d != s for s, d in zip(value.shape, declared))):
        raise Mismatch(f"{what} has shape {dims(value.shape)}, which the model declares "
                       f"{dims(declared)}")
    return value.astype(dtype, copy=False) if cast else array
