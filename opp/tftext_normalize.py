"""tensorflow-text's normalization ops: CaseFoldUTF8, NormalizeUTF8 and FastBertNormalize.

Each lowers to one node of the tensorflow-text family's domain, `ai.tf2ir.text`, run by its
numpy kernel through tf2ir's runtime entry (`tf2ir.InferenceSession`): no standard ONNX op and
no onnxruntime-extensions kernel computes these exactly.

- NormalizeUTF8: Unicode normalization (NFC, NFKC, NFD or NFKD) of each string, by Python's
  `unicodedata`. TF-text normalizes by ICU, whose tables are Unicode 16.0 (tensorflow-text
  2.21); Python 3.11's are 14.0. Every code point assigned by 14.0 maps alike (checked over all
  code points); the ones assigned in 15.0-16.0 (e.g. U+1CCD6.., U+105C9, U+11383) pass unchanged
  here where ICU maps them.
- CaseFoldUTF8: ICU's NFKC_Casefold: Default_Ignorable code points removed, full case folding
  and NFKC, repeated until stable (the same caveat for code points newer than Unicode 14.0).
- FastBertNormalize: the per-code-point mapping of TF-text's FastBertNormalizer, read from its
  model (a flatbuffer: a darts-clone trie from each changed code point's UTF-8 bytes to an
  encoded (offset, length) into a pool of normalized strings). The plugin reads the constant
  model; the trie, the pool and the data of U+0000 travel as attributes, and the kernel walks
  the trie exactly as TF-text's kernel does, so whatever table the model holds is honoured.
  Outputs: the normalized strings, byte offsets (each output byte → its input byte, one more
  for the end) and their row splits; without get_offsets the offsets are empty and the row
  splits zeros, as TF's.
"""

from __future__ import annotations

import struct
import unicodedata
from typing import Dict, List, Tuple

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.shapes import same_as_input
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.tftext_normalize")
DOMAIN = "ai.tf2ir.text"
STRING = ("string",)
FORMS = ("NFC", "NFKC", "NFD", "NFKD")


def lower_by_kernel(ops: OpSet):
    """A lowering to one node of this family's domain carrying the declared attributes."""
    return kernel_lowering(ops, DOMAIN)

def utf8(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def from_utf8(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


_CACHE: Dict[int, tuple] = {}


def cached(array, build):
    """build(array), kept while `array` (a node attribute, the same object on every run) lives:
    a kernel's vocabulary or trie is prepared once, not per run."""
    hit = _CACHE.get(id(array))
    if hit is not None and hit[0] is array:
        return hit[1]
    if len(_CACHE) > 32:
        _CACHE.clear()
    value = build(array)
    _CACHE[id(array)] = (array, value)
    return value


# -- NormalizeUTF8 --------------------------------------------------------------------------
normalize = OPS.declare("NormalizeUTF8", "Unicode normalization (NFC, NFKC, NFD, NFKD) of "
                                         "each string.") \
    .input("input", STRING).output("output", STRING).attr("normalization_form", "str", "NFKC")


@normalize.infer
def _infer_normalize(node):
    form = node.attrs["normalization_form"]
    if form.upper() not in FORMS:
        raise ConversionError(f"normalization_form {form!r} is not one of {', '.join(FORMS)}")
    return same_as_input(node)


normalize.lower(lower_by_kernel(OPS))


@normalize.kernel
def normalize_utf8(x, normalization_form="NFKC"):
    x = _strings(x)
    form = normalization_form.upper()
    return _out_strings([unicodedata.normalize(form, s) for s in x.reshape(-1)], x.shape)


# -- CaseFoldUTF8 ---------------------------------------------------------------------------
# Default_Ignorable_Code_Point (DerivedCoreProperties): NFKC_Casefold maps these to nothing
_IGNORABLE = ((0xAD, 0xAD), (0x34F, 0x34F), (0x61C, 0x61C), (0x115F, 0x1160), (0x17B4, 0x17B5),
              (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F),
              (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0),
              (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
_IGNORABLE_TABLE = {c: None for lo, hi in _IGNORABLE for c in range(lo, hi + 1)}


def nfkc_casefold(s: str) -> str:
    """ICU's NFKC_Casefold of `s`."""
    s = s.translate(_IGNORABLE_TABLE)
    while True:
        folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", s).casefold())
        folded = folded.translate(_IGNORABLE_TABLE)
        if folded == s:
            return s
        s = folded


case_fold = OPS.declare("CaseFoldUTF8", "ICU's NFKC_Casefold of each string.") \
    .input("input", STRING).output("output", STRING)
case_fold.infer(same_as_input)
case_fold.lower(lower_by_kernel(OPS))


@case_fold.kernel
def case_fold_utf8(x):
    x = _strings(x)
    return _out_strings([nfkc_casefold(s) for s in x.reshape(-1)], x.shape)


# -- FastBertNormalize ------------------------------------------------------------------------
def flatbuffer_fields(buffer: bytes, count: int) -> List[int]:
    """The absolute positions of the root table's first `count` fields (0: absent)."""
    if len(buffer) < 8:
        raise ValueError("the model is shorter than a flatbuffer")
    table = struct.unpack_from("<I", buffer, 0)[0]
    vtable = table - struct.unpack_from("<i", buffer, table)[0]
    size = struct.unpack_from("<H", buffer, vtable)[0]
    out = []
    for i in range(count):
        at = 4 + 2 * i
        offset = struct.unpack_from("<H", buffer, vtable + at)[0] if at < size else 0
        out.append(table + offset if offset else 0)
    return out


def flatbuffer_vector(buffer: bytes, field: int, item: str) -> np.ndarray:
    """The vector a field at `field` points to, of struct format `item` ('I', 'B', ...)."""
    if not field:
        return np.zeros(0, np.dtype("<" + item))
    start = field + struct.unpack_from("<I", buffer, field)[0]
    length = struct.unpack_from("<I", buffer, start)[0]
    dtype = np.dtype("<" + item)
    if start + 4 + length * dtype.itemsize > len(buffer):
        raise ValueError("a vector runs past the end of the model")
    return np.frombuffer(buffer, dtype, length, start + 4)


def read_bert_normalizer_model(model) -> Dict[str, object]:
    """The FastBertNormalizerModel flatbuffer's fields: lower_case_nfd_strip_accents,
    trie_array, data_for_codepoint_zero, normalized_string_pool."""
    buffer = np.asarray(model, np.uint8).tobytes()
    try:
        lower, trie, zero, pool = flatbuffer_fields(buffer, 4)
        return {"lower_case_nfd_strip_accents": bool(lower and buffer[lower]),
                "trie": flatbuffer_vector(buffer, trie, "I").astype(np.uint32),
                "data_zero": struct.unpack_from("<i", buffer, zero)[0] if zero else 0,
                "pool": flatbuffer_vector(buffer, pool, "B").astype(np.uint8)}
    except (struct.error, ValueError, IndexError) as exc:
        raise ConversionError(f"the FastBertNormalizer model is not a valid flatbuffer: "
                              f"{exc}") from None


class DartsTrie:
    """Lookups in a darts-clone double-array trie (TF-text's darts_clone_trie_wrapper)."""

    def __init__(self, units):
        self.units = [int(u) for u in np.asarray(units, np.uint32)]

    @staticmethod
    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & 0x200) >> 6)

    def walk(self, node: int, key: bytes):
        """The node reached from `node` along `key`, or None."""
        units, size = self.units, len(self.units)
        if node >= size:
            return None
        unit = units[node]
        for ch in key:
            node ^= self.offset(unit) ^ ch
            if node >= size:
                return None
            unit = units[node]
            if unit & 0x800000FF != ch:
                return None
        return node

    def data(self, node) -> Tuple[bool, int]:
        """(has data, data) at `node`."""
        if node is None or node >= len(self.units):
            return False, 0
        unit = self.units[node]
        if not unit & 0x100:
            return False, 0
        leaf = node ^ self.offset(unit)
        if leaf >= len(self.units):
            return False, 0
        return True, self.units[leaf] & 0x7FFFFFFF


_DIFFERENT, _LENGTH_BITS = 0x40000000, 6


def bert_mapping(trie: DartsTrie, data_zero: int, pool: bytes, char: str):
    """The normalized bytes of one code point, or None where it stays itself."""
    key = utf8(char)
    if key[:1] == b"\0":
        data = data_zero
    else:
        found, data = trie.data(trie.walk(0, key))
        data = data if found else 0
    if not data & _DIFFERENT:
        return None
    length = data & ((1 << _LENGTH_BITS) - 1)
    offset = (data & ((_DIFFERENT - 1) ^ ((1 << _LENGTH_BITS) - 1))) >> _LENGTH_BITS
    return pool[offset:offset + length] if length else b""


bert_normalize = OPS.declare(
    "FastBertNormalize", "TF-text's FastBertNormalizer: each code point of the 1-D strings "
                         "mapped by the model's trie; byte offsets to the input and their "
                         "row splits.") \
    .input("input", STRING).output("output", STRING).output("offsets", ("int64",)) \
    .output("row_splits", ("int64",)) \
    .attr("trie", "tensor").attr("pool", "tensor").attr("data_zero", "int", 0) \
    .attr("get_offsets", "bool", False)


@bert_normalize.infer
def _infer_bert_normalize(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"FastBertNormalize takes 1-D strings, not rank {x.rank}")
    n = x.shape[0] if x.shape is not None else None
    splits = None if n is None or n < 0 else n + 1
    return [TensorDesc("string", (n,) if x.shape is not None else (None,)),
            TensorDesc("int64", (None,)), TensorDesc("int64", (splits,))]


bert_normalize.lower(lower_by_kernel(OPS))


@bert_normalize.kernel
def fast_bert_normalize(x, trie=None, pool=None, data_zero=0, get_offsets=False):
    x = _strings(x).reshape(-1)
    walker = cached(trie, DartsTrie)
    pool_bytes = cached(pool, lambda p: np.asarray(p, np.uint8).tobytes())
    mapped: Dict[str, object] = {}
    texts, offsets, splits = [], [], [0]
    for s in x:
        data = utf8(s)
        out, where, pos = [], [], 0
        for char in s:
            size = len(utf8(char))
            if char not in mapped:
                mapped[char] = bert_mapping(walker, int(data_zero), pool_bytes, char)
            new = mapped[char]
            if new is None:
                out.append(data[pos:pos + size])
                where.extend(range(pos, pos + size))
            else:
                out.append(new)
                where.extend([pos] * len(new))
            pos += size
        texts.append(from_utf8(b"".join(out)))
        if get_offsets:
            offsets.extend(where + [len(data)])
            splits.append(len(offsets))
    if not get_offsets:
        splits = [0] * (len(x) + 1)
    return (_out_strings(texts, (len(texts),)), np.array(offsets, np.int64),
            np.array(splits, np.int64))
