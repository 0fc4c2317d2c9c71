"""tensorflow-text's WordPiece: WordpieceTokenizeWithOffsets, the vocabulary a lookup table
resolved at conversion time. One node of the domain `ai.tf2ir.text`, run by the numpy kernel: onnxruntime-extensions' WordpieceTokenizer differs from TF-text's op (it splits on
whitespace and returns no byte offsets per piece of an input token).

WordpieceTokenize follows TF-text's kernel (wordpiece_tokenizer.cc) to the byte:
- a token longer than max_bytes_per_word becomes one piece: the unknown token (its end offset
  is then the unknown token's length, as TF's) or, without use_unknown_token, the token;
- otherwise greedy longest match from the left over whole UTF-8 characters (at most
  max_chars_per_token of them when that is > 0); pieces after the first are looked up with
  suffix_indicator prepended; a position with no match makes the whole token one unknown
  piece (or the token itself), unless split_unknown_characters, where that one character
  becomes a piece ([suffix_indicator +] unknown_token, or the character);
- an empty token gives no piece.
A vocabulary key is "in the vocabulary" when the table maps it to a value other than -1 (TF
looks keys up with default -1). Outputs: pieces (strings), the row partition (row_splits,
or row_lengths), start and limit byte offsets.
"""

from __future__ import annotations

from typing import Callable, List, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.ir.onnx.writer import tensor_proto
from tf2ir.opp.tftext_normalize import DOMAIN, cached, from_utf8, utf8

OPS = OpSet("tf2ir.opp.tftext_wordpiece")
STRING = ("string",)
PARTITIONS = ("row_splits", "row_lengths")


def char_ends(data: bytes, start: int) -> List[int]:
    """The byte ends of the UTF-8 characters of data[start:] (ICU's U8_NEXT: an invalid
    byte is one character)."""
    ends, i, n = [], start, len(data)
    while i < n:
        lead = data[i]
        size = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        j = i + 1
        while j < min(i + size, n) and 0x80 <= data[j] < 0xC0:
            j += 1
        i = j if j - i == size else i + 1
        ends.append(i)
    return ends


def wordpiece(token: bytes, contains: Callable[[bytes], bool], suffix: bytes,
              max_bytes: int, max_chars: int, use_unknown: bool, unknown: bytes,
              split_unknown: bool) -> List[Tuple[bytes, int, int]]:
    """(piece, start, limit) of one token, as TF-text's WordpieceTokenize."""
    if len(token) > max_bytes:
        return [(unknown, 0, len(unknown))] if use_unknown else [(token, 0, len(token))]
    pieces, start = [], 0
    while start < len(token):
        ends = char_ends(token, start)
        if max_chars > 0:
            ends = ends[:max_chars]
        prefix = suffix if start > 0 else b""
        match = None
        for k in range(len(ends) - 1, -1, -1):
            if contains(prefix + token[start:ends[k]]):
                match = (prefix + token[start:ends[k]], start, ends[k])
                break
            if k == 0 and split_unknown:
                text = unknown if use_unknown else token[start:ends[0]]
                match = (prefix + text, start, ends[0])
        if match is None:
            return [(unknown if use_unknown else token, 0, len(token))]
        pieces.append(match)
        start = match[2]
    return pieces


tokenize = OPS.declare(
    "WordpieceTokenize", "TF-text's WordpieceTokenizeWithOffsets over 1-D tokens, the "
                         "vocabulary (keys in the table with a value other than -1) as an "
                         "attribute: pieces, row partition, start and limit offsets.") \
    .input("input", STRING).output("pieces", STRING).output("row_partition", ("int64",)) \
    .output("starts", ("int64",)).output("limits", ("int64",)) \
    .attr("vocab", "tensor").attr("suffix_indicator", "str", "##") \
    .attr("max_bytes_per_word", "int", 100).attr("max_chars_per_token", "int", 0) \
    .attr("use_unknown_token", "bool", True).attr("unknown_token", "str", "[UNK]") \
    .attr("split_unknown_characters", "bool", False) \
    .attr("output_row_partition_type", "str", "row_splits")


@tokenize.infer
def _infer_tokenize(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"WordpieceTokenizeWithOffsets takes 1-D tokens, not rank {x.rank}")
    kind = node.attrs["output_row_partition_type"]
    if kind not in PARTITIONS:
        raise ConversionError(f"output_row_partition_type {kind!r} is not row_splits or "
                              f"row_lengths")
    n = x.shape[0] if x.shape is not None else None
    rows = None if n is None or n < 0 else n + (kind == "row_splits")
    return [TensorDesc("string", (None,)), TensorDesc("int64", (rows,)),
            TensorDesc("int64", (None,)), TensorDesc("int64", (None,))]


@tokenize.lower
def _lower_tokenize(ctx, node):
    """One node of ai.tf2ir.text; the vocabulary travels as a string TENSOR attribute (the
    native kernel, opp/native/text.cc, reads it by KernelInfoGetAttribute_tensor: onnxruntime's
    C API has no reader of a STRINGS attribute), its keys' bytes kept (surrogateescape)."""
    attrs = {k: v for k, v in node.attrs.items() if k in tokenize.attrs and v is not None}
    words = [v if isinstance(v, bytes) else utf8(str(v))
             for v in np.asarray(attrs.get("vocab", ()), object).reshape(-1)]
    vocab = np.empty(len(words), object)
    vocab[:] = words
    attrs["vocab"] = tensor_proto("vocab", vocab)
    ctx.op.WordpieceTokenize(ctx.input(0), outputs=[ctx.output(i) for i in range(4)],
                             domain=DOMAIN, **attrs)


def vocab_set(vocab) -> set:
    return {utf8(v) if isinstance(v, str) else bytes(v) for v in np.asarray(vocab, object)
            .reshape(-1)}


def ragged_outputs(rows, kind: str):
    """(pieces, row partition, starts, limits) of per-row lists of (piece, start, limit)."""
    flat = [p for row in rows for p in row]
    counts = [len(row) for row in rows]
    partition = counts if kind == "row_lengths" else [0] + list(np.cumsum(counts, dtype=np.int64))
    return (_out_strings([from_utf8(p) for p, _, _ in flat], (len(flat),)),
            np.array(partition, np.int64), np.array([s for _, s, _ in flat], np.int64),
            np.array([e for _, _, e in flat], np.int64))


@tokenize.kernel
def wordpiece_tokenize(x, vocab=None, suffix_indicator="##", max_bytes_per_word=100,
                       max_chars_per_token=0, use_unknown_token=True, unknown_token="[UNK]",
                       split_unknown_characters=False, output_row_partition_type="row_splits"):
    words = cached(vocab, vocab_set)
    suffix, unknown = utf8(suffix_indicator), utf8(unknown_token)
    rows = [wordpiece(utf8(s), words.__contains__, suffix, int(max_bytes_per_word),
                      int(max_chars_per_token), bool(use_unknown_token), unknown,
                      bool(split_unknown_characters))
            for s in _strings(x).reshape(-1)]
    return ragged_outputs(rows, output_row_partition_type)
