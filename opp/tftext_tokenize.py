"""tensorflow-text's splitting ops, run by their Python kernels (nodes of the domain
`ai.tf2ir.text`): onnxruntime-extensions has no kernel with their semantics.

- WhitespaceTokenize (TFText>WhitespaceTokenizeWithOffsetsV2): each string split at the
  codepoints its config marks as whitespace (`whitespace`: the codepoints the config's bitset
  holds, read when the graph is converted); tokens, row splits and byte offsets. TF's
  quirk is kept: a token that a multi-byte whitespace character ends has its end offset one
  byte before that character's end (so the token holds the character's first bytes).
- UnicodeScriptTokenize (UnicodeScriptTokenizeWithOffsets): codepoints grouped into runs of one
  ICU script (the Unicode Script property; whitespace, ICU's White_Space, dropped unless
  keep_whitespace), as TF's kernel walks them. The script of a codepoint comes from the `regex`
  package's Unicode tables (imported when the kernel first runs).
- NgramsStringJoin (TFText>NgramsStringJoin): the `width`-grams of the innermost rows joined by
  `string_separator` (RAGGED_RANK row splits; 0: a dense tensor along its last axis).
- RoundRobinTrim (TFText>RoundRobinTrim): N ragged segments trimmed per batch row to at most
  max_sequence_length values together, as TF's RoundRobinTrimmer allots them.
"""

from __future__ import annotations

import re
from typing import Dict

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.tftext_tokenize")
DOMAIN = "ai.tf2ir.text"
STRING, INT32, INT64 = ("string",), ("int32",), ("int64",)
# ICU's White_Space codepoints (u_isUWhiteSpace), the set TF's default whitespace config holds
WHITE_SPACE = frozenset([0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680]
                        + list(range(0x2000, 0x200B)) + [0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


_lower_by_kernel = kernel_lowering(OPS, DOMAIN)

def _token(data: bytes):
    """A token's bytes as the string tensors carry them: str when valid UTF-8, else bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def whitespace_of_config(config: bytes) -> list:
    """The codepoints a WhitespaceTokenizer config (a bitset, codepoint c at bit c % 8 of
    byte c // 8) marks as whitespace."""
    bits = np.unpackbits(np.frombuffer(config, np.uint8), bitorder="little")
    return np.flatnonzero(bits).tolist()


# -- WhitespaceTokenize ----------------------------------------------------------------------------
whitespace = (OPS.declare("WhitespaceTokenize", "Strings split at the `whitespace` codepoints: "
                          "tokens, row splits, start and end byte offsets.")
              .input("input", STRING).output("tokens", STRING).output("row_splits", INT64)
              .output("starts", INT32).output("ends", INT32).attr("whitespace", "ints", []))


@whitespace.infer
def _infer_whitespace(node):
    return [TensorDesc("string", (None,)), TensorDesc("int64", (None,)),
            TensorDesc("int32", (None,)), TensorDesc("int32", (None,))]


whitespace.lower(_lower_by_kernel)
_SPLITTERS: Dict[tuple, "re.Pattern"] = {}


def _splitter(codes) -> "re.Pattern":
    key = tuple(sorted(set(int(c) for c in codes)))
    found = _SPLITTERS.get(key)
    if found is None:
        chars = "".join(re.escape(chr(c)) for c in key if 0 <= c <= 0x10FFFF)
        found = re.compile(f"[^{chars}]+" if chars else ".+", re.S)
        _SPLITTERS[key] = found
    return found


@whitespace.kernel
def whitespace_tokenize(x, whitespace=()):
    splitter = _splitter(whitespace)
    tokens, splits, starts, ends = [], [0], [], []
    for text in _strings(x).reshape(-1):
        data = text.encode("utf-8", "surrogateescape")
        if text.isascii():
            at = None
        else:   # byte offset of each character (an undecodable byte is one character)
            at = np.cumsum([0] + [len(c.encode("utf-8", "surrogateescape")) for c in text])
        for match in splitter.finditer(text):
            begin, end = match.span()
            start = begin if at is None else int(at[begin])
            stop = end if at is None else int(at[end])
            if end < len(text):          # ended by a whitespace character: TF's position - 1
                stop = (end + 1 if at is None else int(at[end + 1])) - 1
            tokens.append(_token(data[start:stop]))
            starts.append(start)
            ends.append(stop)
        splits.append(len(tokens))
    return (_out_strings(tokens, (len(tokens),)), np.array(splits, np.int64),
            np.array(starts, np.int32), np.array(ends, np.int32))


# -- UnicodeScriptTokenize -------------------------------------------------------------------------
script_tokenize = (OPS.declare("UnicodeScriptTokenize", "Codepoints (values, splits) grouped "
                               "into runs of one Unicode script; whitespace dropped unless "
                               "keep_whitespace.")
                   .input("values", INT32).input("splits", INT64).output("output_values", INT32)
                   .output("inner_splits", INT64).output("starts", INT64)
                   .output("limits", INT64).output("outer_splits", INT64)
                   .attr("keep_whitespace", "bool", False))


@script_tokenize.infer
def _infer_script(node):
    return [TensorDesc("int32", (None,)), TensorDesc("int64", (None,)),
            TensorDesc("int64", (None,)), TensorDesc("int64", (None,)),
            TensorDesc("int64", node.inputs[1].desc.shape)]


script_tokenize.lower(_lower_by_kernel)
_SCRIPTS: Dict[int, int] = {}
_SCRIPT_PATTERN: list = []


def _script_pattern():
    if not _SCRIPT_PATTERN:
        try:
            import regex  # type: ignore[import-untyped]
            from regex import _regex_core
            values = _regex_core.PROPERTIES["SCRIPT"][1]
        except (ImportError, AttributeError, KeyError):
            raise RuntimeError("running UnicodeScriptTokenize by tf2ir's Python kernel needs "
                               "the 'regex' package (pip install regex) for Unicode scripts") \
                from None
        names: Dict[int, str] = {}
        for name, code in values.items():
            names.setdefault(code, name)
        groups = "|".join(f"(?P<s{code}>\\p{{Script={name}}})" for code, name in names.items())
        _SCRIPT_PATTERN.append(regex.compile(groups, regex.V0))
    return _SCRIPT_PATTERN[0]


def script_of(codepoint: int) -> int:
    """A number naming the Unicode script of `codepoint` (-1: not a codepoint, ICU's
    USCRIPT_INVALID_CODE)."""
    found = _SCRIPTS.get(codepoint)
    if found is None:
        found = -1
        if 0 <= codepoint <= 0x10FFFF:
            match = _script_pattern().match(chr(codepoint))
            found = int(match.lastgroup[1:]) if match is not None else 0
        _SCRIPTS[codepoint] = found
    return found


@script_tokenize.kernel
def unicode_script_tokenize(values, splits, keep_whitespace=False):
    values, splits = np.asarray(values).reshape(-1), np.asarray(splits).reshape(-1)
    if splits.size == 0 or splits[0] != 0 or np.any(np.diff(splits) < 0) \
            or splits[-1] > values.size:
        raise ValueError("the splits do not fit the codepoints")
    keep = bool(keep_whitespace)
    out: list = []
    inner: list = []
    starts: list = []
    limits: list = []
    outer: list = []
    for row in range(splits.size - 1):
        outer.append(len(starts))
        begin, end = int(splits[row]), int(splits[row + 1])
        previous, started, skipped, was_space = -1, False, 0, False
        for index in range(begin, end):
            code = int(values[index])
            space = code in WHITE_SPACE
            script = script_of(code)
            if script != previous or (keep and space != was_space):
                if started:
                    limits.append(index - begin - skipped)
                previous, started = script, False
            if not space or keep:
                if not started:
                    starts.append(index - begin)
                    inner.append(len(out))
                    started = True
                out.append(code)
            if not keep:
                skipped = skipped + 1 if space else 0
            was_space = space
        if started:
            limits.append(end - begin - skipped)
    outer.append(len(starts))
    inner.append(len(out))
    return (np.array(out, np.int32), np.array(inner, np.int64), np.array(starts, np.int64),
            np.array(limits, np.int64), np.array(outer, np.int64))


# -- NgramsStringJoin ------------------------------------------------------------------------------
ngrams = (OPS.declare("NgramsStringJoin", "The width-grams of each innermost row joined by "
                      "string_separator (RAGGED_RANK row splits; 0: along the last axis).")
          .input("values", STRING).dynamic_input("splits", INT64, count_attr="RAGGED_RANK")
          .output("output_values", STRING)
          .dynamic_output("output_splits", INT64, count_attr="RAGGED_RANK")
          .attr("width", "int").attr("string_separator", "str", "").attr("RAGGED_RANK", "int", 0))


@ngrams.infer
def _infer_ngrams(node):
    width, rank = node.attrs["width"], node.attrs["RAGGED_RANK"]
    if width < 1:
        raise ConversionError(f"NgramsStringJoin of width {width} (at least 1)")
    values = node.inputs[0].desc
    if rank == 0:
        shape = values.shape
        if shape is None or len(shape) == 0:
            raise ConversionError("NgramsStringJoin of a dense tensor needs its rank (1 or more)")
        last = shape[-1]
        shape = tuple(shape[:-1]) + (None if last is None else max(0, last - width + 1),)
        return [TensorDesc("string", shape)]
    return [TensorDesc("string", (None,))] + [TensorDesc("int64", node.inputs[1 + k].desc.shape)
                                              for k in range(rank)]


ngrams.lower(_lower_by_kernel)


@ngrams.kernel
def ngrams_string_join(values, *splits, width=2, string_separator="", RAGGED_RANK=0):
    values = _strings(values)
    width = int(width)
    if not splits:
        if values.ndim == 0:
            raise ValueError("NgramsStringJoin of a scalar")
        rows = values.reshape(-1, values.shape[-1]) if values.size else \
            values.reshape(-1, values.shape[-1] if values.shape[-1] else 0)
        count = max(0, values.shape[-1] - width + 1)
        out = [string_separator.join(row[i:i + width]) for row in rows for i in range(count)]
        return _out_strings(out, values.shape[:-1] + (count,))
    flat = values.reshape(-1)
    inner = np.asarray(splits[-1]).reshape(-1)
    if inner.size == 0 or inner[0] != 0 or np.any(np.diff(inner) < 0) or inner[-1] > flat.size:
        raise ValueError("the row splits do not fit the values")
    out, out_splits = [], [0]
    for a, b in zip(inner[:-1], inner[1:]):
        row = flat[a:b]
        out += [string_separator.join(row[i:i + width]) for i in range(len(row) - width + 1)]
        out_splits.append(len(out))
    outer = [np.asarray(s, np.int64).copy() for s in splits[:-1]]
    return (_out_strings(out, (len(out),)), *outer, np.array(out_splits, np.int64))


# -- RoundRobinTrim ---------------------------------------------------------------------------------
round_robin = (OPS.declare("RoundRobinTrim", "N ragged segments (values, row splits) trimmed "
                           "per row to max_sequence_length values together, round robin.")
               .input("max_sequence_length", INT32)
               .dynamic_input("values", count_attr="N")
               .dynamic_input("row_splits", ("int32", "int64"), count_attr="N")
               .dynamic_output("output_values", count_attr="N")
               .dynamic_output("output_row_splits", ("int32", "int64"), count_attr="N")
               .attr("N", "int"))


@round_robin.infer
def _infer_round_robin(node):
    n = node.attrs["N"]
    if n < 1 or len(node.inputs) != 1 + 2 * n:
        raise ConversionError(f"RoundRobinTrim of N={n} with {len(node.inputs)} inputs")
    length = node.inputs[0].desc.shape
    if length is not None and len(length) != 0:
        raise ConversionError("max_sequence_length must be a scalar")
    return [TensorDesc(node.inputs[1 + k].desc.dtype, (None,)) for k in range(n)] + \
        [TensorDesc(node.inputs[1 + n + k].desc.dtype, node.inputs[1 + n + k].desc.shape)
         for k in range(n)]


round_robin.lower(_lower_by_kernel)


def round_robin_allot(sizes, budget: int) -> list:
    """How many values of each segment (of `sizes`) one row keeps: TF's RoundRobinTrimmer
    (fill the smallest whole while all still fit, share the rest evenly, then hand the
    remainder out one each in segment order)."""
    n, left = len(sizes), max(int(budget), 0)
    used = [0] * n
    order = sorted(range(n), key=lambda i: sizes[i])
    filled = 0
    for i in order:
        if sizes[i] * (n - filled) > left:
            break
        used[i] = sizes[i]
        left -= sizes[i]
        filled += 1
    if filled < n:
        share = left // (n - filled)
        for i in order[filled:]:
            used[i] = share
            left -= share
    for i in range(n):
        if left <= 0:
            break
        if used[i] < sizes[i]:
            used[i] += 1
            left -= 1
    return used


@round_robin.kernel
def round_robin_trim(max_sequence_length, *segments, N=1):
    n = int(N)
    values = [np.asarray(v).reshape(-1) for v in segments[:n]]
    splits = [np.asarray(s).reshape(-1) for s in segments[n:]]
    rows = splits[0].size - 1
    for v, s in zip(values, splits):
        if s.size != rows + 1 or s.size == 0 or s[0] != 0 or np.any(np.diff(s) < 0) \
                or s[-1] > v.size:
            raise ValueError("the segments' row splits do not fit their values or each other")
    budget = int(np.asarray(max_sequence_length).reshape(-1)[0])
    kept: list = [[] for _ in range(n)]
    new_splits = [[0] for _ in range(n)]
    for row in range(rows):
        sizes = [int(s[row + 1] - s[row]) for s in splits]
        for k, count in enumerate(round_robin_allot(sizes, budget)):
            kept[k].append(values[k][int(splits[k][row]):int(splits[k][row]) + count])
            new_splits[k].append(new_splits[k][-1] + count)
    out_values = [np.concatenate(parts) if parts else values[k][:0]
                  for k, parts in enumerate(kept)]
    out_values = [v if v.dtype != object else _out_strings(list(v), v.shape) for v in out_values]
    return tuple(out_values) + tuple(np.array(s, splits[k].dtype)
                                     for k, s in enumerate(new_splits))
