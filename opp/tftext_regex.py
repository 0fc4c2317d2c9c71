"""tensorflow-text's RegexSplitWithOffsets, with RE2 patterns translated to Python `re`.

onnxruntime-extensions' StringRegexSplitWithOffsets (0.15) does not split as TF-text's op does
(it returned each input whole on the patterns tried, BERT's included), so this op runs by its
numpy kernel in the domain `ai.tf2ir.text`. TF-text's kernel (regex_split.cc) repeats RE2's
FindAndConsume on the rest of the string: the text before each delimiter is a token when not
empty, the delimiter (capture group 1) is a token when keep_delim_regex_pattern FullMatches it,
the rest after the last delimiter is a token when not empty. Offsets are in bytes.

The RE2 patterns are translated to Python `re` by opp/re2.py (the syntax whose meaning the two
share, written out where they differ; each search runs on the rest of the string, as
FindAndConsume does, so ^ matches after each delimiter as in TF); what it cannot reproduce is
refused with one ConversionError, as is a delimiter pattern that matches the empty string
(TF's kernel never returns on it).
"""

from __future__ import annotations

from typing import List, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.re2 import Unsupported, compiled
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.tftext_normalize import lower_by_kernel, utf8

OPS = OpSet("tf2ir.opp.tftext_regex")
STRING = ("string",)


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
