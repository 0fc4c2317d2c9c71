"""tensorflow-text's RegexSplitWithOffsets, with RE2 patterns translated to Python `re`.

onnxruntime-extensions' StringRegexSplitWithOffsets (0.15) does not split as TF-text's op does
(it returned each input whole on the patterns tried, BERT's included), so this op runs by its
numpy kernel in the domain `ai.tf2ir.text`. TF-text's kernel (regex_split.cc) repeats RE2's
FindAndConsume on the rest of the string: the text before each delimiter is a token when not
empty, the delimiter (capture group 1) is a token when keep_delim_regex_pattern FullMatches it,
the rest after the last delimiter is a token when not empty. Offsets are in bytes.

The translation takes the RE2 syntax whose meaning Python's `re` shares, written out where the
two differ: literals and escapes (\\t \\n \\r \\f \\v \\a, \\xHH, \\x{H..}, escaped
punctuation), `.`, classes with ranges, \\d \\s \\w and their negations (ASCII, as RE2's:
\\s is [\\t\\n\\f\\r ]), \\pX / \\p{X} / \\PX / \\P{X} of Unicode general categories (built from
`unicodedata`: Python 3.11's Unicode 14.0, where RE2's tables are newer: code points assigned
after 14.0 are in no category here), groups (...), (?:...), (?P<name>...), alternation,
greedy and lazy quantifiers, and ^ $ \\A \\z (each search runs on the rest of the string, as
FindAndConsume does, so ^ matches after each delimiter as in TF). Refused with one
ConversionError: flags (?i) etc., \\b \\B \\C \\Q..\\E, POSIX [[:classes:]], script names
(\\p{Greek}), back references, and a delimiter pattern that matches the empty string (TF's
kernel never returns on it).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import List, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.tftext_normalize import lower_by_kernel, utf8

OPS = OpSet("tf2ir.opp.tftext_regex")
STRING = ("string",)
MAX_CODE = 0x10FFFF
Ranges = List[Tuple[int, int]]

_SHORTHAND = {"d": [(0x30, 0x39)], "s": [(0x9, 0xA), (0xC, 0xD), (0x20, 0x20)],
              "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]}
_SIMPLE = {"t": 0x9, "n": 0xA, "r": 0xD, "f": 0xC, "v": 0xB, "a": 0x7}
_CATEGORIES = {"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl",
               "No", "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk",
               "So", "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cs"}


class Unsupported(ValueError):
    """A pattern whose RE2 meaning this translation does not reproduce."""


@functools.lru_cache(maxsize=None)
def _all_categories() -> dict:
    """Two-letter general category → its code point ranges, in one pass over Unicode."""
    out: dict = {}
    last, start = None, 0
    for code in range(MAX_CODE + 2):
        cat = unicodedata.category(chr(code)) if code <= MAX_CODE else None
        if cat != last:
            if last is not None:
                out.setdefault(last, []).append((start, code - 1))
            last, start = cat, code
    return out


def category_ranges(name: str) -> Ranges:
    """The code point ranges of general category `name` (one or two letters)."""
    return sorted(r for cat, ranges in _all_categories().items() if cat.startswith(name)
                  for r in ranges)


def complement(ranges: Ranges) -> Ranges:
    out, low = [], 0
    for lo, hi in sorted(ranges):
        if lo > low:
            out.append((low, lo - 1))
        low = max(low, hi + 1)
    if low <= MAX_CODE:
        out.append((low, MAX_CODE))
    return out


def class_text(ranges: Ranges, negate: bool = False) -> str:
    def char(c):
        return f"\\U{c:08x}"
    body = "".join(char(lo) if lo == hi else f"{char(lo)}-{char(hi)}" for lo, hi in ranges)
    if not body:
        return "[^\\s\\S]" if not negate else "[\\s\\S]"
    return f"[{'^' if negate else ''}{body}]"


def _escape(pattern: str, i: int) -> Tuple[object, int]:
    """The escape at pattern[i] (the backslash): (code point | ranges list | ('anchor', s)),
    next index."""
    if i + 1 >= len(pattern):
        raise Unsupported("a trailing backslash")
    c = pattern[i + 1]
    if c in _SIMPLE:
        return _SIMPLE[c], i + 2
    if c.lower() in _SHORTHAND:
        ranges = list(_SHORTHAND[c.lower()])
        return (complement(ranges) if c.isupper() else ranges), i + 2
    if c in "pP":
        if i + 2 >= len(pattern):
            raise Unsupported("\\p without a name")
        if pattern[i + 2] == "{":
            end = pattern.find("}", i + 3)
            if end < 0:
                raise Unsupported("\\p{ without }")
            name, nxt = pattern[i + 3:end], end + 1
        else:
            name, nxt = pattern[i + 2], i + 3
        if name.startswith("^"):
            name, c = name[1:], "P" if c == "p" else "p"
        if name not in _CATEGORIES:
            raise Unsupported(f"\\p{{{name}}} (only general categories translate)")
        ranges = list(category_ranges(name))
        return (complement(ranges) if c == "P" else ranges), nxt
    if c == "x":
        if pattern[i + 2:i + 3] == "{":
            end = pattern.find("}", i + 3)
            digits, nxt = pattern[i + 3:end] if end > 0 else "", end + 1
        else:
            digits, nxt = pattern[i + 2:i + 4], i + 4
        if not digits or not all(d in "0123456789abcdefABCDEF" for d in digits) \
                or int(digits, 16) > MAX_CODE:
            raise Unsupported(f"the escape \\x{digits}")
        return int(digits, 16), nxt
    if c == "A":
        return ("anchor", "\\A"), i + 2
    if c == "z":
        return ("anchor", "\\Z"), i + 2
    if c.isalnum():
        raise Unsupported(f"the escape \\{c}")
    return ord(c), i + 2


def _class(pattern: str, i: int) -> Tuple[str, int]:
    """The class starting at pattern[i] ('['): (Python text, next index)."""
    j, negate = i + 1, False
    if pattern[j:j + 1] == "^":
        negate, j = True, j + 1
    ranges: Ranges = []
    first = True
    while True:
        if j >= len(pattern):
            raise Unsupported("a class without ]")
        c = pattern[j]
        if c == "]" and not first:
            j += 1
            break
        first = False
        if pattern.startswith("[:", j):
            raise Unsupported("POSIX classes [[:name:]]")
        if c == "\\":
            item, j = _escape(pattern, j)
            if isinstance(item, tuple):
                raise Unsupported("an anchor inside a class")
            if isinstance(item, list):
                ranges += item
                continue
            low = item
        else:
            low, j = ord(c), j + 1
        if pattern[j:j + 1] == "-" and pattern[j + 1:j + 2] not in ("]", ""):
            if pattern[j + 1] == "\\":
                high, j = _escape(pattern, j + 1)
                if not isinstance(high, int):
                    raise Unsupported("a range ending in a class escape")
            else:
                high, j = ord(pattern[j + 1]), j + 2
            if high < low:
                raise Unsupported("a range whose end is below its start")
            ranges.append((low, high))
        else:
            ranges.append((low, low))
    return class_text(sorted(ranges), negate), j


_REPEAT = re.compile(r"\{(\d+)(,(\d*))?\}")


def translate(pattern: str) -> str:
    """The Python `re` pattern with the RE2 meaning of `pattern`; Unsupported otherwise."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            item, i = _escape(pattern, i)
            out.append(item[1] if isinstance(item, tuple) else class_text(item)
                       if isinstance(item, list) else re.escape(chr(item)))
        elif c == "[":
            text, i = _class(pattern, i)
            out.append(text)
        elif c == "(":
            if pattern.startswith("(?:", i):
                out.append("(?:")
                i += 3
            elif pattern.startswith("(?P<", i):
                end = pattern.find(">", i)
                if end < 0 or not pattern[i + 4:end].isidentifier():
                    raise Unsupported("a group name")
                out.append(pattern[i:end + 1])
                i = end + 1
            elif pattern.startswith("(?", i):
                raise Unsupported("flags and other (? groups")
            else:
                out.append("(")
                i += 1
        elif c == "{":
            match = _REPEAT.match(pattern, i)
            out.append(match.group(0) if match else "\\{")
            i = match.end() if match else i + 1
        elif c in ")|*+?.":
            out.append(c)
            i += 1
        elif c == "^":
            out.append("\\A")
            i += 1
        elif c == "$":
            out.append("\\Z")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    text = "".join(out)
    try:
        re.compile(text)
    except re.error as exc:
        raise Unsupported(f"the pattern does not parse: {exc}") from None
    return text


@functools.lru_cache(maxsize=64)
def compiled(pattern: str):
    return re.compile(translate(pattern))


def check_patterns(delim: str, keep: str) -> None:
    """ConversionError unless both patterns translate and the delimiter cannot be empty."""
    for what, pattern in (("delim_regex_pattern", delim), ("keep_delim_regex_pattern", keep)):
        try:
            regex = compiled(pattern)
        except Unsupported as exc:
            raise ConversionError(f"RegexSplitWithOffsets: {what} {pattern!r} uses {exc}, "
                                  f"which tf2ir cannot reproduce exactly") from None
        if what.startswith("delim") and regex.fullmatch("") is not None:
            raise ConversionError(f"RegexSplitWithOffsets: delim_regex_pattern {pattern!r} "
                                  f"matches the empty string (TF's kernel never returns)")


split = OPS.declare(
    "RegexSplitWithOffsets", "1-D strings split at matches of delim_regex_pattern (RE2), "
                             "delimiters kept where keep_delim_regex_pattern matches them "
                             "whole: tokens, byte begins and ends, row splits.") \
    .input("input", STRING).output("tokens", STRING).output("begins", ("int64",)) \
    .output("ends", ("int64",)).output("row_splits", ("int64",)) \
    .attr("delim_regex_pattern", "str").attr("keep_delim_regex_pattern", "str", "")


@split.infer
def _infer_split(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"RegexSplitWithOffsets takes 1-D strings, not rank {x.rank}")
    check_patterns(node.attrs["delim_regex_pattern"], node.attrs["keep_delim_regex_pattern"])
    n = x.shape[0] if x.shape is not None else None
    rows = None if n is None or n < 0 else n + 1
    return [TensorDesc("string", (None,)), TensorDesc("int64", (None,)),
            TensorDesc("int64", (None,)), TensorDesc("int64", (rows,))]


split.lower(lower_by_kernel(OPS))


def split_one(s: str, delim, keep, include: bool) -> List[Tuple[str, int, int]]:
    """(token, begin, end) in characters, as TF-text's RegexSplitImpl."""
    out, last = [], 0
    while True:
        match = delim.search(s[last:]) if last <= len(s) else None
        if match is None or delim.groups < 1:
            break
        if match.end() == 0:
            raise ValueError("the delimiter pattern matched the empty string, on which "
                             "TF's kernel never returns")
        start, stop = match.span(1)
        if start < 0:
            raise ValueError("the delimiter's group 1 did not take part in a match")
        if start > 0:
            out.append((s[last:last + start], last, last + start))
        if include and keep.fullmatch(match.group(1)) is not None:
            out.append((match.group(1), last + start, last + stop))
        last += match.end()
    if last < len(s):
        out.append((s[last:], last, len(s)))
    return out


@split.kernel
def regex_split_with_offsets(x, delim_regex_pattern="", keep_delim_regex_pattern=""):
    delim, keep = compiled(delim_regex_pattern), compiled(keep_delim_regex_pattern)
    include = keep_delim_regex_pattern != ""
    tokens, begins, ends, splits = [], [], [], [0]
    for s in _strings(x).reshape(-1):
        pieces = split_one(s, delim, keep, include)
        if pieces and not s.isascii():
            at = np.concatenate([[0], np.cumsum([len(utf8(c)) for c in s])])
            pieces = [(t, int(at[b]), int(at[e])) for t, b, e in pieces]
        for token, begin, end in pieces:
            tokens.append(token)
            begins.append(begin)
            ends.append(end)
        splits.append(len(tokens))
    return (_out_strings(tokens, (len(tokens),)), np.array(begins, np.int64),
            np.array(ends, np.int64), np.array(splits, np.int64))
