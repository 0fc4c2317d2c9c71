"""More of the tf.strings family: Fingerprint, StringNGrams, StringStrip, ReduceJoin,
StringFormat and RegexFullMatch.

ONNX opset 18 has none of them exactly (its StringNormalizer strips nothing, its
StringConcat is opset 20), so they lower to nodes of `ai.tf2ir.unicode`, run by the numpy
kernels below through tf2ir's runtime entry; RegexFullMatch too, by the pattern's Python
translation (opp/re2.py: onnxruntime-extensions' RE2 kernel gives no match in a process that
has loaded TensorFlow, see opp/regex.py).

- Fingerprint (farmhash64): each row of data reshaped to [N, -1] hashed by farmhash's
  Fingerprint64 (opp/fingerprint.py), little-endian into 8 uint8: numbers by their bytes,
  strings one each, or with more than one per row the row's 8-byte fingerprints hashed again.
- StringNGrams: TF's padding rules (pad_width -1: width - 1; never more than width - 1) and
  preserve_short_sequences (one n-gram of the whole padded row when no width fits).
- StringStrip: ASCII whitespace (" \\t\\n\\v\\f\\r") off both ends, as absl's strip.
- ReduceJoin: the reduced axes joined with the first one listed varying fastest; constant
  axes give a known output shape, run-time ones (or an input of unknown rank) an unknown one.
- StringFormat: TF's print_v2 summaries (numpy-like; floats shortest-round-trip as TF's
  FloatToBuffer, strings quoted and C-escaped with UTF-8 kept); complex numbers refused.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.prototype import OpSet
from tf2ir.ir.tensor import NUMBER_TYPES
from tf2ir.opp.fingerprint import fingerprint64
from tf2ir.opp.regex import checked, scalar_text
from tf2ir.opp.shapes import same_as_input
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.unicode import DOMAIN, check_splits, raw_bytes
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.strings_extra")
STRING = ("string",)
FORMAT_TYPES = tuple(t for t in NUMBER_TYPES if not t.startswith("complex")) + ("bool", "string")


_lower = kernel_lowering(OPS, DOMAIN)


# -- Fingerprint -------------------------------------------------------------------------------
FINGERPRINT_TYPES = tuple(t for t in NUMBER_TYPES if t != "bfloat16") + ("bool", "string")
fingerprint = OPS.declare("Fingerprint", "farmhash64 fingerprint of each row of data (first "
                                         "dim), as 8 little-endian uint8.") \
    .input("data", FINGERPRINT_TYPES).output("fingerprint", ("uint8",)) \
    .attr("method", "str", "farmhash64")


@fingerprint.infer
def _infer_fingerprint(node):
    if node.attrs["method"] != "farmhash64":
        raise ConversionError(f"Fingerprint: method {node.attrs['method']!r} is not farmhash64")
    shape = node.inputs[0].desc.shape
    if shape is not None and len(shape) == 0:
        raise ConversionError("Fingerprint: data must have at least one dimension")
    return [TensorDesc("uint8", (None if shape is None else shape[0], 8))]


fingerprint.lower(_lower)


def _le(value: int) -> bytes:
    return value.to_bytes(8, "little")


@fingerprint.kernel
def fingerprint_kernel(data, method="farmhash64"):
    data = np.asarray(data)
    if data.ndim == 0:
        raise ValueError("data should have at least one dimension")
    rows = data.shape[0]
    width = int(np.prod(data.shape[1:], dtype=np.int64))
    if data.dtype == object:
        flat = _strings(data).reshape(rows, width)
        hashes = []
        for row in flat:
            if row.size == 1:
                hashes.append(_le(fingerprint64(raw_bytes(row[0]))))
            else:      # TF hashes the row's fingerprints (TF leaves a [N, 0] row undefined)
                inner = b"".join(_le(fingerprint64(raw_bytes(s))) for s in row)
                hashes.append(_le(fingerprint64(inner)))
    else:
        flat = np.ascontiguousarray(data.reshape(rows, width).astype(data.dtype.newbyteorder("<")))
        hashes = [_le(fingerprint64(row.tobytes())) for row in flat]
    out = np.frombuffer(b"".join(hashes), np.uint8) if hashes else np.zeros(0, np.uint8)
    return out.reshape(rows, 8).copy()


# -- StringNGrams ---------------------------------------------------------------------------------
ngrams = OPS.declare("StringNGrams", "N-grams of each row of a ragged string tensor (data, "
                                     "splits), as TF's StringNGrams.") \
    .input("data", STRING).input("data_splits", ("int32", "int64")) \
    .output("ngrams", STRING).output("ngrams_splits", ("int32", "int64")) \
    .attr("separator", "str").attr("ngram_widths", "ints").attr("left_pad", "str") \
    .attr("right_pad", "str").attr("pad_width", "int").attr("preserve_short_sequences", "bool")


@ngrams.infer
def _infer_ngrams(node):
    if any(w <= 0 for w in node.attrs["ngram_widths"]):
        raise ConversionError("StringNGrams: ngram_widths must be positive, not "
                              f"{list(node.attrs['ngram_widths'])}")
    splits = node.inputs[1].desc
    return [TensorDesc("string", (None,)), TensorDesc(splits.dtype, splits.shape)]


ngrams.lower(_lower)


MAX_NGRAM_PIECES = 1 << 28     # tokens and pads in one row's n-grams: more is refused


def _ngram(tokens, index, count, width, pad, left, right, sep):
    """N-gram `index` of `count` of `width` over `tokens`, padded as TF pads."""
    if count * width > MAX_NGRAM_PIECES:
        raise ValueError(f"{count} n-grams of width {width} in one row are more than this "
                         "kernel makes")
    pad = min(pad, width - 1)
    n_left = max(0, pad - index)
    n_right = max(0, pad - (count - (index + 1)))
    n_tokens = width - (n_left + n_right)
    start = 0 if n_left > 0 else index - pad
    parts = [left] * n_left + list(tokens[start:start + max(n_tokens, 0)]) + [right] * n_right
    return sep.join(parts)


@ngrams.kernel
def string_ngrams(data, splits, separator=" ", ngram_widths=(), left_pad="", right_pad="",
                  pad_width=0, preserve_short_sequences=False):
    data, splits = _strings(data).reshape(-1), np.asarray(splits).reshape(-1)
    widths = [int(w) for w in ngram_widths]
    if any(w <= 0 for w in widths):
        raise ValueError("ngram_widths must contain positive values")
    if splits.size:
        if splits[0] != 0:
            raise ValueError(f"first split value must be 0, got {splits[0]}")
        if np.any(np.diff(splits) < 0):
            raise ValueError("splits must be non-decreasing")
        if splits[-1] != data.size:
            raise ValueError(f"last split value must be data size {data.size}, got {splits[-1]}")
    pad_width = int(pad_width)
    if not data.size:     # TF: no data, no n-grams, whatever the padding
        return _out_strings([], (0,)), np.zeros(splits.size, splits.dtype)

    def pad_of(width):
        return min(width - 1 if pad_width < 0 else pad_width, width - 1)

    out, out_splits = [], [0]
    for r in range(max(splits.size - 1, 0)):
        tokens = data[splits[r]:splits[r + 1]]
        made = len(out)
        for width in widths:
            count = max(0, len(tokens) + 2 * pad_of(width) - width + 1)
            out += [_ngram(tokens, i, count, width, pad_of(width), left_pad, right_pad,
                           separator) for i in range(count)]
        if preserve_short_sequences and len(out) == made and len(tokens):
            width = len(tokens) + 2 * pad_width
            out.append(_ngram(tokens, 0, 1, width, pad_of(width), left_pad, right_pad,
                              separator))
        out_splits.append(len(out))
    if not splits.size:
        out_splits = []
    return _out_strings(out, (len(out),)), np.array(out_splits, splits.dtype)


# -- StringStrip --------------------------------------------------------------------------------
strip = OPS.declare("StringStrip", "ASCII whitespace stripped from both ends of each string.") \
    .input("input", STRING).output("output", STRING)
strip.infer(same_as_input)
strip.lower(_lower)


@strip.kernel
def string_strip(x):
    x = _strings(x)
    return _out_strings([s.strip(" \t\n\v\f\r") for s in x.reshape(-1)], x.shape)


# -- ReduceJoin ------------------------------------------------------------------------------------
reduce_join = OPS.declare("ReduceJoin", "Strings joined by separator across axes (the first "
                                        "listed varies fastest); keep_dims keeps them as 1. "
                                        "The axes are attribute `axes`, or when not constant "
                                        "the input reduction_indices.") \
    .input("inputs", STRING).optional_input("reduction_indices", ("int32", "int64")) \
    .output("output", STRING).attr("axes", "ints", ()) \
    .attr("keep_dims", "bool", False).attr("separator", "str", "")


def _axes(axes, rank):
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"invalid reduction dimension {a} for input of rank {rank}")
        a = a % rank if rank else a
        if a in out:
            raise ValueError(f"duplicate reduction dimension {a}")
        out.append(a)
    return out


@reduce_join.infer
def _infer_reduce_join(node):
    shape = node.inputs[0].desc.shape
    if shape is None or (len(node.inputs) > 1 and node.inputs[1] is not None):
        return [TensorDesc("string", None)]
    try:
        axes = _axes(node.attrs["axes"], len(shape))
    except ValueError as exc:
        raise ConversionError(f"ReduceJoin: {exc}") from None
    keep = node.attrs["keep_dims"]
    out = tuple(1 if i in axes else d for i, d in enumerate(shape) if keep or i not in axes)
    return [TensorDesc("string", out)]


@reduce_join.lower
def _lower_reduce_join(ctx, node):
    """Run-time axes enter as int64 (a Cast where TF's are int32)."""
    inputs = [ctx.input(0)]
    if len(node.inputs) > 1 and node.inputs[1] is not None:
        inputs.append(ctx.op.Cast(ctx.input(1), to=ONNX_DTYPES["int64"]))
    axes = list(node.attrs["axes"])      # an empty list is left out (ONNX cannot type it)
    ctx.op.ReduceJoin(*inputs, out=ctx.output(0), domain=DOMAIN, axes=axes or None,
                      keep_dims=node.attrs["keep_dims"], separator=node.attrs["separator"])


@reduce_join.kernel
def reduce_join_kernel(x, indices=None, axes=(), keep_dims=False, separator=""):
    x = _strings(x)
    listed = axes if indices is None else np.asarray(indices).reshape(-1)
    axes = _axes([int(a) for a in listed], x.ndim)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + axes[::-1])
    rows = moved.reshape(int(np.prod([x.shape[i] for i in kept], dtype=np.int64)),
                         int(np.prod([x.shape[i] for i in axes], dtype=np.int64)))
    out = [separator.join(row) for row in rows]
    shape = [1 if i in axes else x.shape[i] for i in range(x.ndim) if keep_dims or i not in axes]
    return _out_strings(out, tuple(shape))


# -- StringFormat ------------------------------------------------------------------------------------
string_format = OPS.declare("StringFormat", "Template with each placeholder replaced by a "
                                            "summary of one input, as TF's print_v2.") \
    .dynamic_input("inputs", FORMAT_TYPES).output("output", STRING) \
    .attr("template", "str", "%s").attr("placeholder", "str", "%s").attr("summarize", "int", 3)


@string_format.infer
def _infer_format(node):
    placeholder = node.attrs["placeholder"]
    if not placeholder:
        raise ConversionError("StringFormat: an empty placeholder is not supported")
    count = node.attrs["template"].count(placeholder)
    if count != len(node.inputs):
        raise ConversionError(f"StringFormat: {count} placeholders in the template, "
                              f"{len(node.inputs)} inputs")
    for value in node.inputs:
        if value.desc.dtype not in FORMAT_TYPES:
            raise ConversionError(f"StringFormat: inputs of dtype {value.desc.dtype} are not "
                                  "supported (TF prints complex numbers as '?')")
    return [TensorDesc("string", ())]


@string_format.lower
def _lower_format(ctx, node):
    """Half floats enter as float32 (exact, and TF prints them so)."""
    inputs = [ctx.op.Cast(ctx.input(i), to=ONNX_DTYPES["float32"])
              if v.desc.dtype in ("float16", "bfloat16") else ctx.input(i)
              for i, v in enumerate(node.inputs)]
    ctx.op.StringFormat(*inputs, out=ctx.output(0), domain=DOMAIN,
                        template=node.attrs["template"], placeholder=node.attrs["placeholder"],
                        summarize=node.attrs["summarize"])


def _float_text(value, dtype) -> str:
    """TF's FloatToBuffer / DoubleToBuffer: %.6g (%.15g) when it reads back exactly, else
    %.9g (%.17g)."""
    if np.isnan(value):
        return "-nan" if np.signbit(value) else "nan"
    short, full = (6, 9) if dtype == np.float32 else (15, 17)
    text = "%.*g" % (short, float(value))
    return text if dtype(float(text)) == value else "%.*g" % (full, float(value))


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}


def _escape(s: str) -> str:
    """absl's Utf8SafeCEscape of the bytes `s` stands for: non-ASCII bytes kept."""
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\%03o" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def _element(value, dtype) -> str:
    if dtype == object:
        return '"' + _escape(value) + '"'
    if dtype == np.bool_:
        return "1" if value else "0"
    if dtype.kind == "f":
        return _float_text(value, dtype.type)
    return str(int(value))


def summarize_value(x: np.ndarray, summarize: int) -> str:
    """TF's Tensor::SummarizeValue(summarize, print_v2=true)."""
    ends = x.size if summarize < 0 else min(summarize, x.size)
    if ends == 0 and x.dtype == np.bool_:      # TF prints no bools at all
        return ""
    if x.ndim == 0:
        return _element(x.reshape(-1)[0], x.dtype) if ends else "..."
    flat, rank, out = x.reshape(-1), x.ndim, []

    def spacing(dim):
        out.append(" " if dim == rank - 1 else "\n" * (rank - dim - 1) + " " * (dim + 1))

    def dim_text(dim, at):
        if dim == rank:
            out.append(_element(flat[at], x.dtype))
            return
        out.append("[")
        count = x.shape[dim]
        step = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
        for i in range(min(ends, count)):
            if i > 0:
                spacing(dim)
            dim_text(dim + 1, at + step * i)
        if count > 2 * ends:
            spacing(dim)
            out.append("...")
        for i in range(max(ends, count - ends), count):
            spacing(dim)
            dim_text(dim + 1, at + step * i)
        out.append("]")
    dim_text(0, 0)
    return "".join(out)


@string_format.kernel
def string_format_kernel(*inputs, template="%s", placeholder="%s", summarize=3):
    pieces = template.split(placeholder)
    if len(pieces) - 1 != len(inputs):
        raise ValueError(f"{len(pieces) - 1} placeholders in the template, {len(inputs)} inputs")
    out = [pieces[0]]
    for x, piece in zip(inputs, pieces[1:]):
        x = np.asarray(x)
        out += [summarize_value(_strings(x) if x.dtype == object else x, int(summarize)), piece]
    return _out_strings(["".join(out)], ())


# -- RegexFullMatch (RE2, as TF) ---------------------------------------------------------------------
full_match = OPS.declare("RegexFullMatch", "Whether each string matches pattern (RE2) as a "
                                           "whole.") \
    .input("input", STRING).input("pattern", STRING).output("output", ("bool",))


@full_match.infer
def _infer_full_match(node):
    pattern = node.inputs[1].const_value
    if pattern is not None and np.asarray(pattern).size == 1:
        checked("RegexFullMatch", scalar_text(pattern, "pattern"))
    return [TensorDesc("bool", node.inputs[0].desc.shape)]


@full_match.lower
def _lower_full_match(ctx, node):
    pattern = ctx.const_input(1)
    if pattern is None or np.asarray(pattern).size != 1:
        raise ConversionError("RegexFullMatch: the pattern must be one constant string")
    checked("RegexFullMatch", scalar_text(pattern, "pattern"))
    _lower(ctx, node)


@full_match.kernel
def regex_full_match(x, pattern):
    """RE2's FullMatch, by the pattern's Python translation (opp/re2.py)."""
    x, expression = _strings(x), checked("RegexFullMatch", scalar_text(pattern, "pattern"))
    return np.array([expression.fullmatch(s) is not None for s in x.reshape(-1)],
                    bool).reshape(x.shape)
