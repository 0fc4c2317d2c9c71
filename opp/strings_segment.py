"""TF1's StringSplit and UnsortedSegmentJoin (what tf.strings.bytes_split and
tf.strings.reduce_join of a ragged tensor hold: keras-hub's byte-level BPE), nodes of
`ai.tf2ir.strings` run by these numpy kernels.

- StringSplit(input, delimiter; skip_empty): each string of the 1-D `input` split into sparse
  (indices, values, shape). TF splits BYTES: a non-empty delimiter is a SET of bytes (any of
  them ends a token, so a multi-byte character in it splits on each of its bytes), tokens
  left empty are dropped where skip_empty; an empty input string gives no token at all; an
  empty delimiter gives each byte of the string as a token (skip_empty then changes nothing).
  A token need not be UTF-8 (a byte 0x80-0xFF alone, a character cut apart), which
  onnxruntime-extensions' Python kernels cannot return. So where the delimiter is a constant
  empty string (bytes_split), the plugin maps the node to StringBytesSplit, whose kernel gives
  the bytes as numbers (int64), and ByteStrings, ai.onnx.ml LabelEncoder turning each number
  into its one-byte string inside onnxruntime, exactly; the consumers onnxruntime runs itself
  (LabelEncoder of a table lookup, as GPT-2's byte → unicode table) take them as they are.
  Otherwise the StringSplit kernel gives the tokens, and one that is not UTF-8 is a clear
  error.
- UnsortedSegmentJoin(inputs, segment_ids, num_segments; separator): output[s, ...] joins,
  in flat order, the inputs[j, ...] whose segment_ids[j] is s (segment_ids' shape a prefix of
  inputs'), as TF does: the separator goes before a string only when what is joined so far is
  not empty (so leading empty strings vanish, later ones do not). A segment id below zero or
  not below num_segments is TF's InvalidArgument error, as the kernel's error.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INDEX_TYPES
from tf2ir.opp.strings import DOMAIN, _out_strings, _strings
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.strings_segment")
ML_DOMAIN = "ai.onnx.ml"
STRING = ("string",)
INT64 = ("int64",)
ONE_BYTE = [bytes([b]) for b in range(256)]   # LabelEncoder's classes: byte value → its string
MAX_OUTPUT = 1 << 28   # UnsortedSegmentJoin's output strings (a corrupt num_segments: an error)


_lower_by_kernel = kernel_lowering(OPS, DOMAIN)   # one node of ai.tf2ir.strings

def _data(value) -> bytes:
    """The bytes a kernel's str stands for (tf2ir's runtime decodes with surrogateescape)."""
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)


def _check_vector(node, what: str) -> None:
    rank = node.inputs[0].desc.rank
    if rank not in (None, 1):
        raise ConversionError(f"{what} takes a 1-D input, not rank {rank}")


# -- StringSplit -------------------------------------------------------------------------------
split = OPS.declare("StringSplit", "1-D strings split on any byte of delimiter (empty: into "
                                   "bytes) into sparse indices, values and shape; skip_empty "
                                   "drops empty tokens.") \
    .input("input", STRING).input("delimiter", STRING).output("indices", INT64) \
    .output("values", STRING).output("shape", INT64).attr("skip_empty", "bool", True)


@split.infer
def _infer_split(node):
    _check_vector(node, "StringSplit")
    delimiter = node.inputs[1].desc.rank
    if delimiter not in (None, 0):
        raise ConversionError(f"StringSplit's delimiter must be a scalar, not rank {delimiter}")
    return [TensorDesc("int64", (None, 2)), TensorDesc("string", (None,)),
            TensorDesc("int64", (2,))]


def split_bytes(data: bytes, delimiter: bytes, skip_empty: bool) -> list:
    """TF's tokens of one string (bytes)."""
    if not delimiter:
        return [data[i:i + 1] for i in range(len(data))]
    if not data:
        return []
    tokens, start = [], 0
    for at, byte in enumerate(data):
        if byte in delimiter:
            tokens.append(data[start:at])
            start = at + 1
    tokens.append(data[start:])
    return [t for t in tokens if t] if skip_empty else tokens


def _sparse(rows: list):
    indices = [(r, c) for r, tokens in enumerate(rows) for c in range(len(tokens))]
    width = max((len(tokens) for tokens in rows), default=0)
    return (np.array(indices, np.int64).reshape(-1, 2),
            np.array([len(rows), width], np.int64))


def delimiter_bytes(delimiter) -> bytes:
    delimiter = np.asarray(delimiter, object)
    if delimiter.ndim != 0 and delimiter.size != 1:
        raise ValueError(f"delimiter must be a scalar, got shape: {list(delimiter.shape)}")
    return _data(_strings(delimiter).reshape(-1)[0])


def _vector(x) -> np.ndarray:
    x = _strings(x)
    if x.ndim != 1:
        raise ValueError(f"input must be a vector, got shape: {list(x.shape)}")
    return x


@split.kernel
def string_split(x, delimiter, skip_empty=True):
    delimiter = delimiter_bytes(delimiter)
    rows = [split_bytes(_data(s), delimiter, bool(skip_empty)) for s in _vector(x)]
    indices, shape = _sparse(rows)
    values = []
    for tokens in rows:
        for token in tokens:
            try:
                values.append(token.decode("utf-8"))
            except UnicodeDecodeError:
                raise ValueError(
                    f"a token {token!r} of StringSplit is not UTF-8 (the delimiter cuts a "
                    "character apart), which onnxruntime-extensions' string tensors cannot "
                    "carry out of a Python kernel") from None
    return indices, _out_strings(values, (len(values),)), shape


split.lower(_lower_by_kernel)


bytes_split = OPS.declare("StringBytesSplit", "The bytes of each of 1-D strings as sparse "
                                              "indices, byte values (int64) and shape; "
                                              "StringSplit's lowering for an empty delimiter.") \
    .input("input", STRING).output("indices", INT64).output("codes", INT64) \
    .output("shape", INT64)


@bytes_split.infer
def _infer_bytes_split(node):
    _check_vector(node, "StringBytesSplit")
    return [TensorDesc("int64", (None, 2)), TensorDesc("int64", (None,)),
            TensorDesc("int64", (2,))]


@bytes_split.kernel
def string_bytes_split(x):
    data = [_data(s) for s in _vector(x)]
    indices, shape = _sparse(data)
    codes = np.frombuffer(b"".join(data), np.uint8).astype(np.int64)
    return indices, codes, shape


bytes_split.lower(_lower_by_kernel)


byte_strings = OPS.declare("ByteStrings", "Each byte value (0-255) as its one-byte string, "
                                          "by ai.onnx.ml LabelEncoder (any other value: '').") \
    .input("codes", INT64).output("values", STRING)


@byte_strings.infer
def _infer_byte_strings(node):
    return [TensorDesc("string", node.inputs[0].desc.shape)]


@byte_strings.kernel
def byte_strings_kernel(codes):
    codes = np.asarray(codes)
    out = [ONE_BYTE[c] if 0 <= c < 256 else b"" for c in codes.reshape(-1).tolist()]
    return _out_strings(out, codes.shape)


@byte_strings.lower
def _lower_byte_strings(ctx, node):
    ctx.op.LabelEncoder(ctx.input(0), domain=ML_DOMAIN, classes_strings=ONE_BYTE,
                        default_string="", out=ctx.output(0))


# -- UnsortedSegmentJoin -----------------------------------------------------------------------
join = OPS.declare("UnsortedSegmentJoin", "The strings of each segment joined in order by "
                                          "separator (after a non-empty prefix only), "
                                          "num_segments segments.") \
    .input("inputs", STRING).input("segment_ids", INDEX_TYPES) \
    .input("num_segments", INDEX_TYPES).output("output", STRING).attr("separator", "str", "")


@join.infer
def _infer_join(node):
    x, ids = node.inputs[0].desc.shape, node.inputs[1].desc.shape
    count = node.inputs[2].const_value
    if count is not None:
        count = np.asarray(count)
        if count.size != 1:
            raise ConversionError("num_segments must be a scalar")
        count = int(count.reshape(-1)[0])
        if count < 0:
            raise ConversionError(f"Number of segments must be non-negative but got {count}")
    if ids is not None and len(ids) == 0:
        raise ConversionError("Segment_id cannot have rank 0")
    if x is None or ids is None:
        return [TensorDesc("string", None)]
    if len(ids) > len(x):
        raise ConversionError(f"Invalid segment_id rank {len(ids)} for input with {len(x)} "
                              "dimension(s)")
    for a, b in zip(x, ids):
        if a is not None and b is not None and a != b:
            raise ConversionError(f"segment_ids of shape {list(ids)} are not a prefix of "
                                  f"the inputs' shape {list(x)}")
    return [TensorDesc("string", (count,) + tuple(x[len(ids):]))]


@join.kernel
def unsorted_segment_join(x, segment_ids, num_segments, separator=""):
    x, ids = _strings(x), np.asarray(segment_ids)
    counts = np.asarray(num_segments)
    if counts.size != 1:
        raise ValueError("Number of segments cannot be empty.")
    count = int(counts.reshape(-1)[0])
    if count < 0:
        raise ValueError(f"Number of segments must be non-negative but got {count}")
    if ids.ndim == 0:
        raise ValueError("Segment_id cannot have rank 0")
    if ids.ndim > x.ndim:
        raise ValueError(f"Invalid segment_id rank {ids.ndim} for input with {x.ndim} "
                         "dimension(s)")
    if x.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"segment_ids of shape {list(ids.shape)} are not a prefix of the "
                         f"inputs' shape {list(x.shape)}")
    inner = x.shape[ids.ndim:]
    ids = ids.reshape(-1)
    if ids.size and (ids.min() < 0 or ids.max() >= count):
        raise ValueError("segment_ids are not allowed to exceed num_segments or to have "
                         "negative values.")
    width = int(np.prod(inner, dtype=np.int64))
    if count * width > MAX_OUTPUT:
        raise ValueError(f"{count} segments of {width} strings each: more than {MAX_OUTPUT} "
                         "output strings")
    rows = x.reshape((ids.size, width))
    out = [[""] * rows.shape[1] for _ in range(count)]
    for row, segment in zip(rows, ids.tolist()):
        target = out[segment]
        for k, text in enumerate(row):
            target[k] = target[k] + separator + text if target[k] else text
    flat = [s for segment in out for s in segment]
    return _out_strings(flat, (count,) + tuple(inner))


@join.lower
def _lower_join(ctx, node):
    """The kernel node, ids and count as int64 (one signature for the dispatch pool)."""
    operands = [ctx.input(0)]
    for index in (1, 2):
        value = ctx.input(index)
        if node.inputs[index].desc.dtype != "int64":
            value = ctx.op.Cast(value, to=ONNX_DTYPES["int64"])
        operands.append(value)
    ctx.op.UnsortedSegmentJoin(*operands, out=ctx.output(0), domain=DOMAIN,
                               separator=node.attrs["separator"])
