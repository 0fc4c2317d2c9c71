"""Numbers read from and written to text as TF's StringToNumber and AsString kernels do: the
bodies of opp/strings.py's numpy kernels (opp/native/numbers.cc is their native twin).

- Reading (absl::SimpleAtoi, absl::SimpleAtof/SimpleAtod, which TF 2.x calls): ASCII
  whitespace around the text and one '+' (not before a '-') allowed; integers in decimal
  digits only, in range; floats in decimal with an optional exponent, in hexadecimal after 0x
  (fraction and binary exponent optional), inf, infinity and nan(chars) in any case, each
  rounded once from the exact value (float32 too: not through float64), overflowing to inf.
- Writing floats (C's printf, as TF runs it): denormals flushed to signed zero, a NaN's sign
  shown ("-nan", where Python's % formatting writes "nan"), inf and nan padded with spaces
  under the '0' flag (Python's pads them with zeros).
"""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from fractions import Fraction
from typing import Optional, Union

import numpy as np

ASCII_SPACE = " \t\n\v\f\r"
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"-?(?:(?P<hex>0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)"
                         r"(?:[pP][+-]?[0-9]+)?)|(?P<inf>(?i:inf|infinity))"
                         r"|(?P<nan>(?i:nan)(?:\([0-9A-Za-z_]*\))?)"
                         r"|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


def parse_number(s: str, dtype) -> Optional[Union[int, float, np.floating]]:
    """The value of `dtype` (int32, int64, float32 or float64) TF reads from `s`, or None."""
    if np.dtype(dtype).kind == "i":
        text = s.strip(ASCII_SPACE)
        if not _INT_TEXT.fullmatch(text):
            return None
        value = int(text)
        info = np.iinfo(dtype)
        return value if info.min <= value <= info.max else None
    return _parse_float(s, np.dtype(dtype) == np.float32)


def _parse_float(s: str, single: bool):
    text = s.strip(ASCII_SPACE)
    if text[:1] == "+":
        text = text[1:]
        if text[:1] == "-":
            return None
    match = _FLOAT_TEXT.fullmatch(text)
    if match is None:
        return None
    if match["inf"] or match["nan"]:
        value = math.copysign(math.inf if match["inf"] else math.nan, -1.0 if text[0] == "-" else 1.0)
        return np.float32(value) if single else value
    value = float.fromhex(text) if match["hex"] else float(text)
    return _to_float32(text, value, bool(match["hex"])) if single else value


def _to_float32(text: str, value: float, hexadecimal: bool):
    """`value` (the float64 nearest `text`) as the float32 nearest `text`: the two roundings
    differ only where `value` falls exactly halfway between two float32s (a float64 with 28
    low mantissa bits zero, at least)."""
    if int.from_bytes(struct.pack("<d", value), "little") & 0xFFFFFFF:
        return value                       # not halfway: numpy's one rounding is the same
    with np.errstate(over="ignore"):
        near = np.float32(value)
        if float(near) == value:
            return near
        below = near if float(near) < value else np.nextafter(near, np.float32(-np.inf))
        above = near if float(near) > value else np.nextafter(near, np.float32(np.inf))
    ends = [math.copysign(2.0 ** 128, float(b)) if np.isinf(b) else float(b) for b in (below, above)]
    if (ends[0] + ends[1]) / 2 != value:
        return near
    exact = _exact(text, hexadecimal)
    if exact == Fraction(value):
        return near                        # a true tie: to even, as np.float32 rounded it
    return above if exact > Fraction(value) else below


def _exact(text: str, hexadecimal: bool) -> Fraction:
    if not hexadecimal:
        return Fraction(Decimal(text))
    sign = -1 if text.startswith("-") else 1
    body, _, exponent = text.lstrip("-")[2:].replace("P", "p").partition("p")
    whole, _, fraction = body.partition(".")
    mantissa = int((whole + fraction) or "0", 16)
    return sign * Fraction(mantissa) * Fraction(2) ** (int(exponent or "0") - 4 * len(fraction))


def printf_float(spec: str, value: float, smallest: float) -> str:
    """C's printf of `value` with `spec` as TF runs it; `smallest`: the input type's smallest
    normal (below it, TF's flushed denormals print as zero)."""
    if not math.isfinite(value):   # C pads inf and nan with spaces, never zeros
        spec = "%" + spec[1:].lstrip("0")
        if math.isnan(value):
            return (spec % math.copysign(math.inf, value)).replace("inf", "nan")
    if value != 0 and abs(value) < smallest:
        value = math.copysign(0.0, value)
    return spec % value
