"""RegexReplace (TF's RegexReplace and StaticRegexReplace): RE2's Replace / GlobalReplace with
RE2's rewrite syntax, run by the numpy kernel below in `ai.tf2ir.strings` over the pattern's
Python translation (opp/re2.py), so it gives TF's results in any process.

onnxruntime-extensions' StringRegexReplace is RE2 too, but in a process that has loaded
TensorFlow (TF's RE2 symbols come first) it returns every input unchanged, even for the pattern
"a" (measured with onnxruntime-extensions 0.15.2 and TF 2.21; in a process without TF it gave
RE2's results): a converted model must not change its answer with the process that runs it,
so no lowering uses it.

RE2's rewrite: \\0 to \\9 are the match and its groups (a group that did not take part is
empty), \\\\ a backslash, every other character itself ($1 too). As RE2, a rewrite naming a
group the pattern lacks replaces nothing, and one with any other backslash escape is cut there
(GlobalReplace writes the part before it for each match; Replace changes nothing). Global
replacement skips an empty match right where the previous match ended by one character.
A constant pattern that does not translate is refused with one ConversionError; a run-time one
fails the run with the same reason.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet
from tf2ir.opp.re2 import Unsupported, compiled
from tf2ir.opp.shapes import same_as_input
from tf2ir.opp.strings import DOMAIN, _out_strings, _strings, _text

OPS = OpSet("tf2ir.opp.regex")
STRING = ("string",)


def scalar_text(value, what: str) -> str:
    array = np.asarray(value, object)
    if array.size != 1:
        raise ValueError(f"{what} must be a scalar string, not of shape {list(array.shape)}")
    return _text(array.reshape(-1)[0])


def checked(op_type: str, pattern: str):
    """The compiled translation of `pattern`, or one ConversionError naming op and reason."""
    try:
        return compiled(pattern)
    except Unsupported as exc:
        raise ConversionError(f"{op_type}: the pattern {pattern!r} uses {exc}, which tf2ir "
                              f"cannot reproduce exactly") from None


regex = OPS.declare("RegexReplace", "Matches of pattern (RE2) replaced by rewrite: every match, "
                                    "or with replace_global false the first.") \
    .input("input", STRING).input("pattern", STRING).input("rewrite", STRING) \
    .output("output", STRING).attr("replace_global", "bool", True)


@regex.infer
def _infer_regex(node):
    pattern = node.inputs[1].const_value
    if pattern is not None:
        checked("RegexReplace", scalar_text(pattern, "pattern"))
    return same_as_input(node)


@regex.lower
def _lower_regex(ctx, node):
    ctx.op.RegexReplace(ctx.input(0), ctx.input(1), ctx.input(2), out=ctx.output(0),
                        domain=DOMAIN, replace_global=node.attrs["replace_global"])


@regex.kernel
def regex_replace(x, pattern, rewrite, replace_global=True):
    x = _strings(x)
    pattern, rewrite = scalar_text(pattern, "pattern"), scalar_text(rewrite, "rewrite")
    try:
        expression = compiled(pattern)
    except Unsupported as exc:
        raise ValueError(f"the pattern {pattern!r} uses {exc}, which tf2ir cannot reproduce "
                         "exactly") from None
    rewrite_parts = parse_rewrite(rewrite)
    return _out_strings([replace(expression, s, rewrite_parts, bool(replace_global))
                         for s in x.reshape(-1)], x.shape)


# -- RE2::Rewrite, Replace and GlobalReplace -------------------------------------------------------
def parse_rewrite(rewrite: str) -> Tuple[list, int, bool]:
    """RE2's rewrite: (pieces: text or group numbers, the highest group named anywhere (RE2's
    MaxSubmatch), whether an invalid escape cuts it short (RE2's Rewrite fails there))."""
    pieces, text, i = [], [], 0
    highest, k = 0, 0
    while k < len(rewrite):            # RE2's MaxSubmatch: every \digit, even past a bad escape
        if rewrite[k] == "\\" and rewrite[k + 1:k + 2] in tuple("0123456789"):
            highest = max(highest, int(rewrite[k + 1]))
        k += 2 if rewrite[k] == "\\" else 1
    while i < len(rewrite):
        c = rewrite[i]
        if c != "\\":
            text.append(c)
            i += 1
            continue
        nxt = rewrite[i + 1:i + 2]
        if nxt == "\\":
            text.append("\\")
        elif nxt in tuple("0123456789"):
            pieces += ["".join(text), int(nxt)]
            text = []
        else:
            pieces.append("".join(text))
            return pieces, highest, True
        i += 2
    pieces.append("".join(text))
    return pieces, highest, False


def _render(match, pieces) -> str:
    return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in pieces)


def replace(expression, s: str, rewrite_parts, replace_global: bool) -> str:
    """RE2::GlobalReplace (every match) or RE2::Replace (the first) in `s`."""
    pieces, highest, broken = rewrite_parts
    if highest > expression.groups:
        return s                    # RE2 replaces nothing
    if not replace_global:
        match = expression.search(s)
        if match is None or broken:
            return s
        return s[:match.start()] + _render(match, pieces) + s[match.end():]
    out, at, last_end, count = [], 0, -1, 0
    while at <= len(s):
        match = expression.search(s, at)
        if match is None:
            break
        out.append(s[at:match.start()])
        if match.start() == last_end and match.end() == match.start():
            out.append(s[at:at + 1])       # an empty match where the last ended: step on
            at += 1
            continue
        out.append(_render(match, pieces))
        at = last_end = match.end()
        count += 1
    if count == 0:
        return s
    out.append(s[at:])
    return "".join(out)
