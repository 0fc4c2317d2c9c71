"""tensorflow-text's FastWordpieceTokenizer: FastWordpieceTokenizeWithOffsets and
FastWordpieceDetokenize, each one node of the domain `ai.tf2ir.text` run by a Python kernel.

The op's model is a FastWordpieceTokenizerConfig flatbuffer (a constant TF-text's Python class
builds from a vocabulary): a darts-clone trie of the vocabulary (suffix tokens under the
suffix indicator's node), the LinMaxMatch failure links and failure pops of each node, the
suffix-indicator root, the punctuation failure-link node, the precomputed tokenization of the
suffix indicator itself, max bytes per token, the unknown token and its id, the end-to-end flag
and, where support_detokenization, the vocabulary strings. The whole buffer travels as the
node's `model` attribute; the kernel reads it and runs the linear WordPiece algorithm over
those very tables, as TF-text's kernel does, so whatever the model builder wrote (dropped
tokens, the dummy nodes of punctuation outside the vocabulary) is honoured:

- single-word mode (no_pretokenization): a word longer than max_bytes_per_token, or one the
  trie cannot segment, is one unknown token spanning the word; otherwise longest match first;
- end-to-end mode: words end at White_Space (skipped) and at punctuation or CJK ideographs
  (each its own word), matched by whole UTF-8 characters; a word reaching max bytes or an
  unmatchable character becomes one unknown token up to the next boundary.

Pieces are input bytes (suffix pieces get the indicator prepended; pieces whose id is the
unknown id are the unknown token); offsets are byte offsets. Character classes: ICU's
White_Space and u_ispunct (general category P*) plus TF-text's CJK and ASCII symbol ranges;
here from Python's unicodedata (Unicode 14.0; ICU's is newer, so punctuation assigned after
14.0 is not a boundary here). UTF-8 is decoded as ICU's U8_NEXT (an ill-formed sequence is one
non-character spanning its maximal valid prefix).
"""

from __future__ import annotations

import struct
import unicodedata
from functools import lru_cache
from typing import Dict, List

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.tftext_normalize import (cached, flatbuffer_fields, flatbuffer_vector, from_utf8,
                                        lower_by_kernel, utf8)

OPS = OpSet("tf2ir.opp.tftext_fastwordpiece")
NULL = 0xFFFFFFFF


# -- the model ------------------------------------------------------------------------------
def _string(buffer: bytes, field: int) -> bytes:
    if not field:
        return b""
    start = field + struct.unpack_from("<I", buffer, field)[0]
    length = struct.unpack_from("<I", buffer, start)[0]
    if start + 4 + length > len(buffer):
        raise ValueError("a string runs past the end of the model")
    return buffer[start + 4:start + 4 + length]


def _scalar(buffer: bytes, field: int, fmt: str) -> int:
    return struct.unpack_from("<" + fmt, buffer, field)[0] if field else 0


def _strings_vector(buffer: bytes, field: int) -> List[bytes]:
    if not field:
        return []
    start = field + struct.unpack_from("<I", buffer, field)[0]
    length = struct.unpack_from("<I", buffer, start)[0]
    return [_string(buffer, start + 4 + 4 * i) for i in range(length)]


def read_model(model) -> Dict[str, object]:
    """The FastWordpieceTokenizerConfig flatbuffer's fields (ValueError where malformed)."""
    buffer = np.asarray(model, np.uint8).tobytes()
    try:
        f = flatbuffer_fields(buffer, 14)
        trie = flatbuffer_vector(buffer, f[0], "I")
        links = flatbuffer_vector(buffer, f[1], "Q").view("<u4").reshape(-1, 2)
        out = {"trie": [int(u) for u in trie], "link": [int(v) for v in links[:, 0]],
               "pops": [int(v) for v in links[:, 1]],
               "pool": [int(v) for v in flatbuffer_vector(buffer, f[2], "i")],
               "suffix_root": _scalar(buffer, f[3], "I"),
               "max_bytes": _scalar(buffer, f[4], "i"),
               "suffix": _string(buffer, f[5]), "unk": _string(buffer, f[6]),
               "unk_id": _scalar(buffer, f[7], "i"),
               "precomputed": [int(v) for v in flatbuffer_vector(buffer, f[8], "i")],
               "punct_node": _scalar(buffer, f[9], "I"),
               "end_to_end": bool(_scalar(buffer, f[10], "B")),
               "detokenize": bool(_scalar(buffer, f[11], "B")),
               "vocab": _strings_vector(buffer, f[12]),
               "is_suffix": [bool(v) for v in flatbuffer_vector(buffer, f[13], "B")]}
    except (struct.error, IndexError) as exc:
        raise ValueError(f"not a FastWordpieceTokenizerConfig flatbuffer ({exc})") from None
    if not out["trie"]:
        raise ValueError("the model has no trie")
    return out


# -- character classes, UTF-8 as ICU's U8_NEXT -----------------------------------------------
WHITE_SPACE = frozenset([*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                         0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
ASCII_PUNCT = ((33, 47), (58, 64), (91, 96), (123, 126))


@lru_cache(maxsize=65536)
def is_punct_or_cjk(cp: int) -> bool:
    if cp < 0:
        return False
    if any(lo <= cp <= hi for lo, hi in CJK + ASCII_PUNCT):
        return True
    return unicodedata.category(chr(cp)).startswith("P")


def _second_byte_range(lead: int):
    return {0xE0: (0xA0, 0xBF), 0xED: (0x80, 0x9F), 0xF0: (0x90, 0xBF),
            0xF4: (0x80, 0x8F)}.get(lead, (0x80, 0xBF))


def u8_next(data: bytes, i: int, n: int):
    """(code point or -1 for an ill-formed sequence, the position after it)."""
    lead = data[i]
    i += 1
    if lead < 0x80:
        return lead, i
    if 0xC2 <= lead <= 0xDF:
        trail, cp = 1, lead & 0x1F
    elif 0xE0 <= lead <= 0xEF:
        trail, cp = 2, lead & 0x0F
    elif 0xF0 <= lead <= 0xF4:
        trail, cp = 3, lead & 0x07
    else:
        return -1, i
    lo, hi = _second_byte_range(lead)
    for k in range(trail):
        if i >= n or not (lo <= data[i] <= hi if k == 0 else 0x80 <= data[i] <= 0xBF):
            return -1, i
        cp = (cp << 6) | (data[i] & 0x3F)
        i += 1
    return cp, i


# -- the linear WordPiece tokenizer over the model ---------------------------------------------
class Tokenizer:
    """One text's tokenization: `out` holds (piece, id, start, end)."""

    def __init__(self, model: Dict[str, object]):
        self.m = model
        self.trie, self.size = model["trie"], len(model["trie"])
        self.out: list = []
        self.kept = 0  # tokens of finished words (TF's original_num_tokens)
        self.budget = 0  # failure transitions left: each pops >= 1 byte of a valid model's input

    # darts-clone trie
    def step(self, node: int, piece: bytes):
        trie, size = self.trie, self.size
        if node >= size:
            return None
        unit = trie[node]
        for ch in piece:
            node ^= ((unit >> 10) << ((unit & 0x200) >> 6)) ^ ch
            if node >= size:
                return None
            unit = trie[node]
            if unit & 0x800000FF != ch:
                return None
        return node

    def data(self, node: int):
        if node >= self.size or not self.trie[node] & 0x100:
            return None
        unit = self.trie[node]
        leaf = node ^ ((unit >> 10) << ((unit & 0x200) >> 6))
        return self.trie[leaf] & 0x7FFFFFFF if leaf < self.size else None

    def append(self, value: int, word: bytes, start: int, at: List[int]) -> None:
        m, offset = self.m, at[0]
        token_id = (value & 0x3FFFFF00) >> 8
        length = (value & 0xFF) + 1
        if not offset and value >> 30:
            length += len(m["suffix"])
        piece = m["unk"] if token_id == m["unk_id"] else word[offset:offset + length]
        self.out.append((m["suffix"] + piece if offset else piece, token_id,
                         start + offset, start + offset + length))
        at[0] = offset + length

    def follow(self, node: int, word: bytes, start: int, at: List[int]):
        """The failure transition from `node` (its pops appended), or None."""
        self.budget -= 1
        if self.budget < 0:
            raise ValueError("FastWordpieceTokenize: the model's failure links loop (a "
                             "malformed model)")
        links = self.m["link"]
        link = links[node] if node < len(links) else NULL
        value = self.data(node)
        if value is not None:
            self.append(value, word, start, at)
            return link
        if link == NULL:
            return None
        pops, pool = self.m["pops"][node], self.m["pool"]
        first = pops >> 8
        for value in pool[first:first + (pops & 0xFF) + 1]:
            self.append(value, word, start, at)
        return link

    def unknown(self, start: int, size: int) -> None:
        del self.out[self.kept:]
        self.out.append((self.m["unk"], self.m["unk_id"], start, start + size))
        self.kept += 1

    def finish(self, word: bytes, start: int, node: int, at: List[int]) -> None:
        """Segment what the trie path to `node` holds (TF's HandleTheRemainingStringOnTriePath)."""
        m = self.m
        if node == 0:
            return
        if node == m["suffix_root"] and len(self.out) == self.kept:
            pre = m["precomputed"]
            if len(pre) == 1 and (pre[0] & 0x3FFFFF00) >> 8 == m["unk_id"]:
                self.unknown(start, len(word))
            else:
                for value in pre:
                    self.append(value, word, start, at)
            self.kept = len(self.out)
            return
        while node != m["suffix_root"] and node != m["punct_node"]:
            node = self.follow(node, word, start, at)
            if node is None:
                self.unknown(start, len(word))
                return
        self.kept = len(self.out)

    def word(self, word: bytes) -> None:
        if not word:
            return
        if 0 <= self.m["max_bytes"] < len(word):
            self.unknown(0, len(word))
            return
        node, at = 0, [0]
        for ch in word:
            while True:
                moved = self.step(node, bytes((ch,)))
                if moved is not None:
                    node = moved
                    break
                node = self.follow(node, word, 0, at)
                if node is None:
                    self.unknown(0, len(word))
                    return
        self.finish(word, 0, node, at)

    def text(self, text: bytes) -> None:
        n, pos, char = len(text), 0, -1
        max_bytes = self.m["max_bytes"]
        while pos < n:
            node, length, start, at = 0, 0, pos, [0]
            rest = text[pos:]
            while pos < n:
                prev = char
                char, nxt = u8_next(text, pos, n)
                if length + nxt - pos > max_bytes:
                    break
                moved = self.step(node, text[pos:nxt])
                while moved is None:
                    link = self.follow(node, rest, start, at)
                    if link is None:
                        break
                    node, moved = link, self.step(link, text[pos:nxt])
                if moved is None:
                    break
                node, length, pos = moved, length + nxt - pos, nxt
            if pos >= n:
                self.finish(rest, start, node, at)
                return
            space = char in WHITE_SPACE
            if space or is_punct_or_cjk(char) or (pos and is_punct_or_cjk(prev)):
                self.finish(rest[:pos - start], start, node, at)
                if space:
                    pos = nxt
                continue
            pos = end = nxt
            while pos < n:
                c, after = u8_next(text, pos, n)
                if c in WHITE_SPACE:
                    pos = after
                    break
                if is_punct_or_cjk(c):
                    break
                end = pos = after
            self.unknown(start, end - start)


def _model(model) -> Dict[str, object]:
    return cached(model, read_model)


def tokenize_one(model: Dict[str, object], text: bytes) -> list:
    tokenizer = Tokenizer(model)
    tokenizer.budget = 4 * len(text) + 16
    (tokenizer.text if model["end_to_end"] else tokenizer.word)(text)
    return tokenizer.out


# -- FastWordpieceTokenizeWithOffsets -----------------------------------------------------------
tokenize = OPS.declare(
    "FastWordpieceTokenize", "TF-text's FastWordpieceTokenizeWithOffsets over 1-D strings, its "
                             "model flatbuffer an attribute: pieces, ids, row splits, start "
                             "and end byte offsets.") \
    .input("input", ("string",)).output("pieces", ("string",)).output("ids", ("int64",)) \
    .output("row_splits", ("int64",)).output("starts", ("int64",)) \
    .output("ends", ("int64",)).attr("model", "tensor")


def _check_model(node) -> Dict[str, object]:
    try:
        return cached(node.attrs["model"], read_model)
    except ValueError as exc:
        raise ConversionError(f"{node.op_type}: the WordPiece model is {exc}") from None


@tokenize.infer
def _infer_tokenize(node):
    _check_model(node)
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"FastWordpieceTokenizeWithOffsets takes 1-D strings, not rank "
                              f"{x.rank}")
    n = x.shape[0] if x.shape is not None else None
    splits = None if n is None or n < 0 else n + 1
    flat = (None,)
    return [TensorDesc("string", flat), TensorDesc("int64", flat),
            TensorDesc("int64", (splits,)), TensorDesc("int64", flat),
            TensorDesc("int64", flat)]


tokenize.lower(lower_by_kernel(OPS))


@tokenize.kernel
def fast_wordpiece_tokenize(x, model=None):
    m = _model(model)
    texts = _strings(x).reshape(-1)
    seen: Dict[str, list] = {}
    rows = []
    for s in texts:
        if s not in seen:
            seen[s] = tokenize_one(m, utf8(s))
        rows.append(seen[s])
    flat = [t for row in rows for t in row]
    splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(row) for row in rows], out=splits[1:])
    return (_out_strings([from_utf8(t[0]) for t in flat], (len(flat),)),
            np.array([t[1] for t in flat], np.int64), splits,
            np.array([t[2] for t in flat], np.int64), np.array([t[3] for t in flat], np.int64))


# -- FastWordpieceDetokenize ------------------------------------------------------------------
detokenize = OPS.declare(
    "FastWordpieceDetokenize", "TF-text's FastWordpieceDetokenize: each row of int32 ids "
                               "(row splits int64) joined into words by the model's "
                               "vocabulary, words separated by a space.") \
    .input("values", ("int32",)).input("row_splits", ("int64",)) \
    .output("words", ("string",)).attr("model", "tensor")


@detokenize.infer
def _infer_detokenize(node):
    m = _check_model(node)
    if not m["detokenize"]:
        raise ConversionError(f"{node.op_type}: the WordPiece model was built without "
                              f"support_detokenization (TF's op fails at run time)")
    splits = node.inputs[1].desc
    n = splits.shape[0] if splits.shape is not None else None
    return [TensorDesc("string", (None if n is None or n < 0 else max(n - 1, 0),))]


detokenize.lower(lower_by_kernel(OPS))


def detokenize_row(m: Dict[str, object], ids) -> bytes:
    vocab, flags, suffix = m["vocab"], m["is_suffix"], m["suffix"]
    words: List[bytes] = []
    parts: List[bytes] = []
    for token in ids:
        token = int(token)
        if not 0 <= token < min(len(vocab), len(flags)):
            raise ValueError(f"FastWordpieceDetokenize: id {token} is outside the vocabulary "
                             f"of {len(vocab)} tokens")
        if parts and not flags[token]:
            words.append(b"".join(parts))
            parts = []
        if not parts and flags[token]:
            parts.append(suffix)
        parts.append(vocab[token])
    if parts:
        words.append(b"".join(parts))
    return b" ".join(words)


@detokenize.kernel
def fast_wordpiece_detokenize(values, row_splits, model=None):
    m = _model(model)
    values = np.asarray(values).reshape(-1)
    splits = np.asarray(row_splits, np.int64).reshape(-1)
    if splits.size and (splits[0] < 0 or splits[-1] > values.size or np.any(np.diff(splits) < 0)):
        raise ValueError("FastWordpieceDetokenize: row splits do not partition the ids")
    words = [from_utf8(detokenize_row(m, values[a:b])) for a, b in zip(splits[:-1], splits[1:])]
    return _out_strings(words, (len(words),))
