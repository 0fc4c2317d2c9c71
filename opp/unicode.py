"""Unicode ops: StringLength, UnicodeDecode(WithOffsets), UnicodeEncode, UnicodeTranscode.

They lower to nodes of `ai.tf2ir.unicode`, run by the numpy kernels below through tf2ir's
runtime entry: ONNX has no op that decodes text to code points, and onnxruntime-extensions'
StringLength counts differently on bytes that are not UTF-8.

TF's semantics, which the kernels follow (checked against TF 2.21 on fuzzed bytes):
- StringLength: bytes, or with unit UTF8_CHAR the bytes that are not UTF-8 continuation
  bytes (10xxxxxx), which is the number of characters of valid UTF-8.
- Decoding (ICU's converters): an ill-formed UTF-8 sequence is one error per maximal
  subpart (Unicode's recommended practice, as Python's decoder); UTF-16-BE: an unpaired
  surrogate or a trailing odd byte is an error; UTF-32-BE: a unit above U+10FFFF, a
  surrogate or trailing bytes. errors "replace" gives replacement_char at the error's first
  byte, "ignore" drops it, "strict" fails the run. replace_control_characters treats
  U+0000-U+001F as errors that even "strict" replaces.
- Encoding (UTF-8 only: other encodings make bytes that onnxruntime's string tensors do
  not carry through Python kernels): code points that are negative, above U+10FFFF or
  surrogates are errors; a surrogate replacement_char encodes as U+FFFD.
"""

from __future__ import annotations

import codecs

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc
from tf2ir.ir.prototype import OpSet
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.unicode")
DOMAIN = "ai.tf2ir.unicode"
STRING = ("string",)
SPLITS = ("int32", "int64")
ENCODINGS = ("UTF-8", "UTF-16-BE", "UTF-32-BE")
ERRORS = ("strict", "replace", "ignore")
MAX_CODE_POINT = 0x10FFFF


def raw_bytes(value: str) -> bytes:
    """The bytes a kernel's str stands for (tf2ir's runtime decodes with surrogateescape)."""
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)


lower_by_kernel = kernel_lowering(OPS, DOMAIN)   # one node of ai.tf2ir.unicode

def _flat_count(desc):
    """The element count of a desc's shape, None when not static."""
    if desc.shape is None or any(d is None or d < 0 for d in desc.shape):
        return None
    return int(np.prod(desc.shape, dtype=np.int64))


def _check_choice(node, name: str, allowed) -> None:
    value = node.attrs[name]
    if value not in allowed:
        raise ConversionError(f"{node.op_type}: {name} {value!r} is not one of "
                              f"{', '.join(allowed)}")


def _check_replacement(node) -> None:
    value = node.attrs["replacement_char"]
    if not 0 <= value <= MAX_CODE_POINT:
        raise ConversionError(f"{node.op_type}: replacement_char {value} is out of the Unicode "
                              "code point range (TF fails every run)")


# -- StringLength -------------------------------------------------------------------------------------
length = OPS.declare("StringLength", "Length of each string in bytes, or with unit UTF8_CHAR "
                                     "in UTF-8 characters (bytes that are not continuation "
                                     "bytes).") \
    .input("input", STRING).output("output", ("int32",)).attr("unit", "str", "BYTE")


@length.infer
def _infer_length(node):
    _check_choice(node, "unit", ("BYTE", "UTF8_CHAR"))
    return [TensorDesc("int32", node.inputs[0].desc.shape)]


length.lower(lower_by_kernel)


@length.kernel
def string_length(x, unit="BYTE"):
    x = _strings(x)
    counts = []
    for s in x.reshape(-1):
        data = raw_bytes(s)
        counts.append(len(data) if unit == "BYTE" else
                      len(data) - sum(1 for b in data if b & 0xC0 == 0x80))
    return np.array(counts, np.int32).reshape(x.shape)


# -- decoding ---------------------------------------------------------------------------------------
def _mark(error: UnicodeDecodeError):
    """Python's UTF-8 decoder calls this once per maximal ill-formed subpart: a lone
    surrogate (never in decoded UTF-8) stands for it and carries its length."""
    return chr(0xDC00 + error.end - error.start), error.end


codecs.register_error("tf2ir.unicode.mark", _mark)


def _units_utf8(data: bytes):
    """(code point, or -1 for an error; first byte) of each character of `data`."""
    out, at = [], 0
    for ch in data.decode("utf-8", "tf2ir.unicode.mark"):
        cp = ord(ch)
        if 0xDC00 < cp < 0xDC10:
            out.append((-1, at))
            at += cp - 0xDC00
        else:
            out.append((cp, at))
            at += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return out


def _units_utf16(data: bytes):
    out, at, n = [], 0, len(data)
    while at < n:
        if at + 1 >= n:
            out.append((-1, at))
            break
        unit = (data[at] << 8) | data[at + 1]
        if 0xD800 <= unit < 0xDC00 and at + 3 == n:     # a lead and a stray byte: one error
            out.append((-1, at))
            break
        if 0xD800 <= unit < 0xDC00 and at + 3 < n:
            low = (data[at + 2] << 8) | data[at + 3]
            if 0xDC00 <= low < 0xE000:
                out.append((0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00), at))
                at += 4
                continue
        out.append((-1 if 0xD800 <= unit < 0xE000 else unit, at))
        at += 2
    return out


def _units_utf32(data: bytes):
    out = []
    for at in range(0, len(data), 4):
        if at + 4 > len(data):
            out.append((-1, at))
            break
        cp = int.from_bytes(data[at:at + 4], "big")
        out.append((-1 if cp > MAX_CODE_POINT or 0xD800 <= cp < 0xE000 else cp, at))
    return out


_UNITS = {"UTF-8": _units_utf8, "UTF-16-BE": _units_utf16, "UTF-32-BE": _units_utf32}


def decode_string(data: bytes, encoding: str, errors: str, replacement: int,
                  replace_control: bool):
    """(code points, byte starts) of one string, as TF's decoders give them."""
    values, starts = [], []
    for cp, at in _UNITS[encoding](data):
        if cp < 0 and errors == "strict":
            raise ValueError(f"invalid {encoding} at byte {at} of a string (errors='strict')")
        if cp < 0 or (replace_control and cp < 0x20):
            if errors == "ignore":
                continue
            cp = replacement
        values.append(cp)
        starts.append(at)
    return values, starts


def _decode(x, input_encoding, errors, replacement_char, replace_control_characters, Tsplits):
    if input_encoding not in _UNITS:
        raise ValueError(f"input_encoding {input_encoding!r} is not one of {', '.join(ENCODINGS)}")
    if not 0 <= int(replacement_char) <= MAX_CODE_POINT:
        raise ValueError("replacement_char out of unicode codepoint range")
    x = _strings(x).reshape(-1)
    splits, values, starts = [0], [], []
    for s in x:
        v, o = decode_string(raw_bytes(s), input_encoding, errors, int(replacement_char),
                             bool(replace_control_characters))
        values += v
        starts += o
        splits.append(len(values))
    return (np.array(splits, np.dtype(Tsplits)), np.array(values, np.int32),
            np.array(starts, np.int64))


def _declare_decode(op_type: str, offsets: bool):
    p = OPS.declare(op_type, "Each string decoded to code points, flat, with row splits" +
                    (" and each character's first byte." if offsets else ".")) \
        .input("input", STRING).output("row_splits", SPLITS).output("char_values", ("int32",))
    if offsets:
        p.output("char_to_byte_starts", ("int64",))
    p.attr("input_encoding", "str").attr("errors", "str", "replace") \
        .attr("replacement_char", "int", 0xFFFD) \
        .attr("replace_control_characters", "bool", False).attr("Tsplits", "dtype", "int64")

    @p.infer
    def _infer(node):
        _check_choice(node, "input_encoding", ENCODINGS)
        _check_choice(node, "errors", ERRORS)
        _check_choice(node, "Tsplits", SPLITS)
        _check_replacement(node)
        count = _flat_count(node.inputs[0].desc)
        descs = [TensorDesc(node.attrs["Tsplits"], (None if count is None else count + 1,)),
                 TensorDesc("int32", (None,))]
        return descs + ([TensorDesc("int64", (None,))] if offsets else [])

    p.lower(lower_by_kernel)

    @p.kernel
    def _kernel(x, input_encoding="UTF-8", errors="replace", replacement_char=0xFFFD,
                replace_control_characters=False, Tsplits="int64"):
        out = _decode(x, input_encoding, errors, replacement_char, replace_control_characters,
                      Tsplits)
        return out if offsets else out[:2]
    return p, _kernel


decode, unicode_decode = _declare_decode("UnicodeDecode", False)
decode_offsets, unicode_decode_with_offsets = _declare_decode("UnicodeDecodeWithOffsets", True)


# -- encoding -----------------------------------------------------------------------------------------
def _valid(cp: int) -> bool:
    return 0 <= cp <= MAX_CODE_POINT and not 0xD800 <= cp < 0xE000


def encode_chars(values, errors: str, replacement: int) -> str:
    """Code points as text (UTF-8 once encoded), invalid ones by `errors`."""
    chars = []
    for cp in values:
        cp = int(cp)
        if not _valid(cp):
            if errors == "strict":
                raise ValueError(f"code point {cp} is out of range for Unicode, or is a "
                                 "surrogate (errors='strict')")
            if errors == "ignore":
                continue
            cp = replacement if _valid(replacement) else 0xFFFD
        chars.append(chr(cp))
    return "".join(chars)


def check_splits(splits: np.ndarray, count: int) -> None:
    """TF's checks of row splits over `count` values."""
    if splits.size == 0:
        raise ValueError(f"input_splits has no elements (values have {count})")
    if splits[0] != 0:
        raise ValueError("the first value in input_splits must be zero")
    if np.any(np.diff(splits) < 0):
        raise ValueError("values in input_splits must be in ascending order")
    if splits[-1] != count:
        raise ValueError(f"the last value in input_splits ({splits[-1]}) must be the number "
                         f"of values ({count})")


encode = OPS.declare("UnicodeEncode", "Rows of code points (values and row splits) encoded "
                                      "as UTF-8 strings.") \
    .input("input_values", ("int32",)).input("input_splits", SPLITS) \
    .output("output", STRING).attr("errors", "str", "replace") \
    .attr("output_encoding", "str").attr("replacement_char", "int", 0xFFFD)


@encode.infer
def _infer_encode(node):
    if node.attrs["output_encoding"] != "UTF-8":
        raise ConversionError(
            f"UnicodeEncode: output_encoding {node.attrs['output_encoding']!r} makes bytes that "
            "are not UTF-8, which onnxruntime's string tensors cannot carry through tf2ir's "
            "kernels; only UTF-8 converts")
    _check_choice(node, "errors", ERRORS)
    _check_replacement(node)
    splits = node.inputs[1].desc
    rows = None if splits.shape is None or splits.shape[0] is None else splits.shape[0] - 1
    return [TensorDesc("string", (rows,))]


@encode.lower
def _lower_encode(ctx, node):
    """The splits enter the kernel node as int64 (a Cast where TF's are int32)."""
    from tf2ir.ir.onnx.writer import ONNX_DTYPES
    splits = ctx.input(1)
    if node.inputs[1].desc.dtype != "int64":
        splits = ctx.op.Cast(splits, to=ONNX_DTYPES["int64"])
    ctx.op.UnicodeEncode(ctx.input(0), splits, out=ctx.output(0), domain=DOMAIN,
                         errors=node.attrs["errors"],
                         output_encoding=node.attrs["output_encoding"],
                         replacement_char=node.attrs["replacement_char"])


@encode.kernel
def unicode_encode(values, splits, errors="replace", output_encoding="UTF-8",
                   replacement_char=0xFFFD):
    if output_encoding != "UTF-8":
        raise ValueError(f"output_encoding {output_encoding!r} is not UTF-8")
    values, splits = np.asarray(values).reshape(-1), np.asarray(splits).reshape(-1)
    check_splits(splits, values.size)
    texts = [encode_chars(values[splits[i]:splits[i + 1]], errors, int(replacement_char))
             for i in range(splits.size - 1)]
    return _out_strings(texts, (len(texts),))


# -- transcoding -----------------------------------------------------------------------------------
transcode = OPS.declare("UnicodeTranscode", "Each string decoded from input_encoding and "
                                            "encoded as UTF-8.") \
    .input("input", STRING).output("output", STRING) \
    .attr("input_encoding", "str").attr("output_encoding", "str") \
    .attr("errors", "str", "replace").attr("replacement_char", "int", 0xFFFD) \
    .attr("replace_control_characters", "bool", False)


@transcode.infer
def _infer_transcode(node):
    _check_choice(node, "input_encoding", ENCODINGS)
    if node.attrs["output_encoding"] != "UTF-8":
        raise ConversionError(
            f"UnicodeTranscode: output_encoding {node.attrs['output_encoding']!r} makes bytes "
            "that are not UTF-8, which onnxruntime's string tensors cannot carry through "
            "tf2ir's kernels; only UTF-8 converts")
    _check_choice(node, "errors", ERRORS)
    _check_replacement(node)
    return [TensorDesc("string", node.inputs[0].desc.shape)]


transcode.lower(lower_by_kernel)


@transcode.kernel
def unicode_transcode(x, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace",
                      replacement_char=0xFFFD, replace_control_characters=False):
    if input_encoding not in _UNITS or output_encoding != "UTF-8":
        raise ValueError(f"cannot transcode {input_encoding!r} to {output_encoding!r}")
    x = _strings(x)
    replacement = int(replacement_char)
    if not 0 <= replacement <= MAX_CODE_POINT:
        raise ValueError("replacement_char out of unicode codepoint range")
    texts = []
    for s in x.reshape(-1):
        values, _ = decode_string(raw_bytes(s), input_encoding, errors, replacement,
                                  bool(replace_control_characters))
        texts.append("".join(chr(cp if _valid(cp) else 0xFFFD) for cp in values))
    return _out_strings(texts, x.shape)
