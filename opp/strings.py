"""String ops (RegexReplace is in opp/regex.py). They lower to nodes of `ai.tf2ir.strings`,
run natively by tf2ir's own library (opp/native) where it was built, else by these numpy
kernels (the reference): ONNX has no exact string op, and the extensions' kernels differ from
TF's (hashing, non-ASCII case, empty splits).

- StringCase: ASCII letters, or with encoding "utf-8" every cased letter (as TF's ICU).
- StringToHashBucketFast: farmhash's Fingerprint64 of the bytes, modulo num_buckets.
- StringToNumber, AsString (TF's printf formats: width, fill, precision, scientific, shortest).
- StringSplitV2: split by sep (empty: runs of ASCII whitespace) into sparse (indices, values,
  dense_shape); maxsplit limits the splits. StringJoin (one shape or scalars, by separator),
  Substr (BYTE or UTF8_CHAR units, negative positions from the end), StringEqual.
"""

from __future__ import annotations

import re

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.ir.onnx.writer import ONNX_DTYPES
from tf2ir.ir.tensor import INDEX_TYPES, NUMBER_TYPES, numpy_dtype
from tf2ir.opp.shapes import broadcast_shapes, same_as_input
from tf2ir.opp.fingerprint import fingerprint64
from tf2ir.opp.number_text import parse_number, printf_float
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.strings")
DOMAIN = "ai.tf2ir.strings"
EXTENSIONS = "ai.onnx.contrib"
STRING = ("string",)


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _strings(array) -> np.ndarray:
    """An object array of Python str, whatever onnxruntime handed over."""
    array = np.asarray(array)
    return np.vectorize(_text, otypes=[object])(array) if array.size else array.astype(object)


def _out_strings(values, shape) -> np.ndarray:
    out = np.empty(len(values), object)
    out[:] = values
    return out.reshape(shape)


_lower_by_kernel = kernel_lowering(OPS, DOMAIN)   # one node of this family's domain

# -- case -----------------------------------------------------------------------------------------
case = OPS.declare("StringCase", "Strings lowered or uppered: ASCII letters, or with encoding "
                                 "utf-8 every cased letter.") \
    .input("input", STRING).output("output", STRING) \
    .attr("upper", "bool", False).attr("encoding", "str", "")
case.lower(_lower_by_kernel)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
# Where TF's utf-8 case change (ICU, Unicode 13 in TF 2.21) differs from Python's (Unicode 14):
# code points (hex ranges) it leaves as they are, neither cased nor case-ignorable (for a final
# sigma), and one it takes as case-ignorable. tools/gen_case_table.py --check proves it on every
# code point; opp/native/case_table.h is generated from Python's str methods and these.
TF_UNCASED = tuple(tuple(int(v, 16) for v in (r + "-" + r).split("-")[:2]) for r in """
888 890-891 898-89F 8C9-8D2 C3C 180F 1AC1-1ACE 1DFA 2C2F 2C5F A7C0-A7C1 A7D0-A7D1 A7D3 A7D5-A7D9
A7F2-A7F4 FBC2 10570-1057A 1057C-1058A 1058C-10592 10594-10595 10597-105A1 105A3-105B1 105B3-105B9
105BB-105BC 10780-10785 10787-107B0 107B2-107BA 10F82-10F85 11070 11073-11074 110C2 1AFF0-1AFF3
1AFF5-1AFFB 1AFFD-1AFFE 1CF00-1CF2D 1CF30-1CF46 1DF00-1DF09 1DF0B-1DF1E 1E2AE""".split())
TF_CASE_IGNORABLE = "\u1734"
_UNCASED = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in TF_UNCASED) + "]")
_TF_ODD = re.compile(_UNCASED.pattern[:-1] + TF_CASE_IGNORABLE + "]")


def sigma_class(c: str) -> str:
    """TF's class of a character around a capital sigma: "cased", "ignorable" or "other"."""
    if c in TF_CASE_IGNORABLE or _UNCASED.match(c):
        return "ignorable" if c in TF_CASE_IGNORABLE else "other"
    return "cased" if (c + "\u03a3").lower()[-1] == "\u03c2" else \
        "other" if ("A\u03a3" + c + "A").lower()[1] == "\u03c2" else "ignorable"


def _cased_beside(s: str, at: int, step: int) -> bool:
    at += step
    while 0 <= at < len(s) and sigma_class(s[at]) == "ignorable":
        at += step
    return 0 <= at < len(s) and sigma_class(s[at]) == "cased"


def _case_utf8(s: str, upper: bool) -> str:
    """TF's utf-8 StringLower/StringUpper (ICU): the text ends at a NUL byte, invalid UTF-8
    becomes U+FFFD (maximal subparts), then the full case mapping with final sigma."""
    s = s.encode("utf-8", "surrogateescape").split(b"\0", 1)[0].decode("utf-8", "replace")
    if _TF_ODD.search(s) is None:
        return s.upper() if upper else s.lower()
    return "".join(c if _UNCASED.match(c) else c.upper() if upper else c.lower() if c != "\u03a3"
                   else "\u03c2" if _cased_beside(s, at, -1) and not _cased_beside(s, at, 1)
                   else "\u03c3" for at, c in enumerate(s))


@case.kernel
def string_case(x, upper=False, encoding=""):
    x = _strings(x)
    if encoding not in ("", "utf-8"):
        raise ValueError(f"encoding {encoding!r} is not '' or 'utf-8'")
    if encoding:
        change = lambda s: _case_utf8(s, bool(upper))   # noqa: E731
    else:
        table = _ASCII_UPPER if upper else _ASCII_LOWER
        change = lambda s: s.translate(table)   # noqa: E731
    return _out_strings([change(s) for s in x.reshape(-1)], x.shape)


@case.infer
def _infer_case(node):
    if node.attrs["encoding"] not in ("", "utf-8"):
        raise ConversionError(f"encoding {node.attrs['encoding']!r} is not '' or 'utf-8'")
    return same_as_input(node)


# -- hashing ----------------------------------------------------------------------------------------
hash_bucket = OPS.declare("StringToHashBucketFast", "Fingerprint64 of each string's bytes "
                                                    "modulo num_buckets.") \
    .input("input", STRING).output("output", ("int64",)).attr("num_buckets", "int")


@hash_bucket.infer
def _infer_hash(node):
    if node.attrs["num_buckets"] < 1:
        raise ConversionError(f"num_buckets must be at least 1, not {node.attrs['num_buckets']}")
    return [TensorDesc("int64", node.inputs[0].desc.shape)]


hash_bucket.lower(_lower_by_kernel)


@hash_bucket.kernel
def string_to_hash_bucket_fast(x, num_buckets=1):
    x = _strings(x)
    buckets = [fingerprint64(s.encode("utf-8", "surrogateescape")) % int(num_buckets)
               for s in x.reshape(-1)]
    return np.array(buckets, np.int64).reshape(x.shape)


# -- equality of two run-time string tensors (Equal/NotEqual lower here: ONNX opset 18's Equal
# has no string kernel, and a constant operand goes to LabelEncoder instead) ---------------------
string_equal = OPS.declare("StringEqual", "x1 == x2 (negate: !=), strings broadcast, as bool; "
                                          "the kernel Equal and NotEqual of two run-time string "
                                          "tensors lower to.") \
    .input("x1", STRING).input("x2", STRING).output("y", ("bool",)).attr("negate", "bool", False)


@string_equal.infer
def _infer_string_equal(node):
    shape = broadcast_shapes(node.inputs[0].desc.shape, node.inputs[1].desc.shape)
    return [TensorDesc("bool", shape)]


string_equal.lower(_lower_by_kernel)


@string_equal.kernel
def string_equal_kernel(x1, x2, negate=False):
    a, b = np.broadcast_arrays(_strings(x1), _strings(x2))
    equal = np.array([p == q for p, q in zip(a.reshape(-1), b.reshape(-1))], bool).reshape(a.shape)
    return ~equal if negate else equal


# -- numbers ↔ strings ------------------------------------------------------------------------------
NUMBER_OUT = ("float32", "float64", "int32", "int64")
to_number = OPS.declare("StringToNumber", "Each string parsed as a number of out_type.") \
    .input("input", STRING).output("output", NUMBER_OUT).attr("out_type", "dtype", "float32")


@to_number.infer
def _infer_to_number(node):
    if node.attrs["out_type"] not in NUMBER_OUT:
        raise ConversionError(f"out_type {node.attrs['out_type']} is not one of "
                              f"{', '.join(NUMBER_OUT)}")
    return [TensorDesc(node.attrs["out_type"], node.inputs[0].desc.shape)]


@to_number.lower
def _lower_to_number(ctx, node):
    ctx.op.StringToNumber(ctx.input(0), out=ctx.output(0), domain=DOMAIN,
                          out_type=node.attrs["out_type"])


@to_number.kernel
def string_to_number(x, out_type="float32"):
    """TF's parsing (opp/number_text.py)."""
    x, dtype = _strings(x), numpy_dtype(out_type)
    values = [parse_number(s, dtype) for s in x.reshape(-1)]
    for s, value in zip(x.reshape(-1), values):
        if value is None:
            raise ValueError(f"StringToNumberOp could not correctly convert string: {s}")
    with np.errstate(over="ignore"):     # float32 overflow: inf, as TF
        return np.array(values, dtype).reshape(x.shape)


AS_STRING_TYPES = NUMBER_TYPES + ("bool",)
as_string = OPS.declare("AsString", "Each number or bool formatted as TF's AsString does "
                                    "(printf: fill, width, precision; %f, %e or %g).") \
    .input("input", AS_STRING_TYPES).output("output", STRING) \
    .attr("precision", "int", -1).attr("scientific", "bool", False) \
    .attr("shortest", "bool", False).attr("width", "int", -1).attr("fill", "str", "")


MAX_FIELD = 4096   # AsString's width and precision (opp/native/numbers.cc has the same limit)


def as_string_format(dtype: str, precision: int, scientific: bool, shortest: bool, width: int,
                     fill: str) -> str:
    """TF's printf format for AsString of `dtype`; ValueError where TF refuses the attrs."""
    floating = dtype.startswith(("float", "bfloat"))
    if len(fill) > 1:
        raise ValueError(f"fill {fill!r} is more than one character")
    if fill and fill not in " +-0#":
        raise ValueError(f"fill {fill!r} is not one of ' ', '+', '-', '0', '#'")
    if scientific and shortest:
        raise ValueError("scientific and shortest cannot both be set")
    if not floating and (precision > -1 or scientific or shortest):
        raise ValueError(f"precision, scientific and shortest apply to floats, not {dtype}")
    if max(width, precision) > MAX_FIELD:   # a crafted model must not make each string GBs
        raise ValueError(f"width {width} or precision {precision} is over tf2ir's limit of "
                         f"{MAX_FIELD} characters")
    spec = "%" + fill + (str(width) if width > -1 else "")
    if floating:
        return spec + (f".{precision}" if precision > -1 else "") + ("e" if scientific else
                                                                     "g" if shortest else "f")
    return spec + ("d" if dtype != "bool" else "s")


@as_string.infer
def _infer_as_string(node):
    a = node.attrs
    try:
        as_string_format(node.inputs[0].desc.dtype, a["precision"], a["scientific"],
                         a["shortest"], a["width"], a["fill"])
    except ValueError as exc:
        raise ConversionError(f"AsString: {exc}") from None
    return [TensorDesc("string", node.inputs[0].desc.shape)]


@as_string.lower
def _lower_as_string(ctx, node):
    """The kernel node; half floats enter as float32 (exactly, and TF formats them so), which
    onnxruntime-extensions' Python ops can take."""
    x = ctx.input(0)
    if node.inputs[0].desc.dtype in ("float16", "bfloat16"):
        x = ctx.op.Cast(x, to=ONNX_DTYPES["float32"])
    declared = as_string.attrs
    ctx.op.AsString(x, out=ctx.output(0), domain=DOMAIN,
                    **{k: v for k, v in node.attrs.items() if k in declared})


@as_string.kernel
def as_string_kernel(x, precision=-1, scientific=False, shortest=False, width=-1, fill=""):
    x = np.asarray(x)
    dtype = "bool" if x.dtype == np.bool_ else "float32" if x.dtype.kind == "f" else "int64"
    spec = as_string_format(dtype, int(precision), bool(scientific), bool(shortest), int(width),
                            fill)
    if dtype == "bool":          # TF: no width, no fill
        texts = ["true" if v else "false" for v in x.reshape(-1)]
    elif dtype == "int64":   # unsigned: TF's %u, which ignores the '+' and ' ' flags
        spec = "%" + spec[1:].lstrip("+ ") if x.dtype.kind == "u" else spec
        texts = [spec % int(v) for v in x.reshape(-1)]
    else:   # C's printf, as TF (opp/number_text.py)
        tiny = float(np.finfo(np.float64 if x.dtype == np.float64 else np.float32).tiny)
        texts = [printf_float(spec, float(v), tiny) for v in x.reshape(-1)]
    return _out_strings(texts, x.shape)


# -- splitting and joining ----------------------------------------------------------------------
split = OPS.declare("StringSplitV2", "1-D strings split by sep (empty: ASCII whitespace runs) "
                                     "into sparse indices, values and dense_shape.") \
    .input("input", STRING).input("sep", STRING).output("indices", ("int64",)) \
    .output("values", STRING).output("shape", ("int64",)).attr("maxsplit", "int", -1)


@split.infer
def _infer_split(node):
    x = node.inputs[0].desc
    if x.rank not in (None, 1):
        raise ConversionError(f"StringSplitV2 takes 1-D input, not rank {x.rank}")
    return [TensorDesc("int64", (None, 2)), TensorDesc("string", (None,)),
            TensorDesc("int64", (2,))]


split.lower(_lower_by_kernel)
_SPACE = " \t\n\v\f\r"
_WHITESPACE = re.compile(f"[{_SPACE}]+")


def _split_whitespace(s: str, maxsplit: int):
    """TF's whitespace split: tokens between runs of ASCII whitespace; once maxsplit tokens
    are taken, the rest (from the next token on, even if empty) is one more."""
    if maxsplit == 0:
        return [s]
    tokens = []
    rest = s.lstrip(_SPACE)
    while rest:
        match = _WHITESPACE.search(rest)
        tokens.append(rest if match is None else rest[:match.start()])
        rest = "" if match is None else rest[match.end():]
        if len(tokens) == maxsplit:
            tokens.append(rest)
            break
    return tokens


@split.kernel
def string_split_v2(x, sep, maxsplit=-1):
    x, sep = _strings(x).reshape(-1), _text(_strings(sep).reshape(-1)[0])
    rows = [_split_whitespace(s, int(maxsplit)) if sep == "" else s.split(sep, int(maxsplit))
            for s in x]
    indices = [(r, c) for r, tokens in enumerate(rows) for c in range(len(tokens))]
    values = [t for tokens in rows for t in tokens]
    width = max((len(tokens) for tokens in rows), default=0)
    return (np.array(indices, np.int64).reshape(-1, 2), _out_strings(values, (len(values),)),
            np.array([len(rows), width], np.int64))


join = OPS.declare("StringJoin", "Strings of one shape (or scalars) joined elementwise by "
                                 "separator.") \
    .dynamic_input("inputs", STRING).output("output", STRING).attr("separator", "str", "")


@join.infer
def _infer_join(node):
    shapes = [v.desc.shape for v in node.inputs]
    return [TensorDesc("string", broadcast_shapes(*shapes))]


join.lower(_lower_by_kernel)


@join.kernel
def string_join(*inputs, separator=""):
    shapes = {np.shape(a) for a in inputs if np.ndim(a)}   # TF: one shape, or scalars
    if len(shapes) > 1:
        raise ValueError(f"Input shapes do not match: {' vs. '.join(map(str, sorted(shapes)))}")
    arrays = np.broadcast_arrays(*[_strings(a) for a in inputs])
    shape = arrays[0].shape
    flat = [a.reshape(-1) for a in arrays]
    return _out_strings([separator.join(parts) for parts in zip(*flat)], shape)


substr = OPS.declare("Substr", "The len units from pos of each string (negative pos from the "
                               "end); pos and len broadcast against input.") \
    .input("input", STRING).input("pos", INDEX_TYPES).input("len", INDEX_TYPES) \
    .output("output", STRING).attr("unit", "str", "BYTE")


@substr.infer
def _infer_substr(node):
    if node.attrs["unit"] not in ("BYTE", "UTF8_CHAR"):
        raise ConversionError(f"unit {node.attrs['unit']!r} is not BYTE or UTF8_CHAR")
    return [TensorDesc("string", broadcast_shapes(*[v.desc.shape for v in node.inputs]))]


substr.lower(_lower_by_kernel)


def _utf8_step(data: bytes, count: int, at: int, step: int):
    """TF's Forward/BackNUTF8CharPositions: `count` characters (a byte and its trailing
    0x80-0xBF bytes) on from byte `at`; (where, whether there were that many)."""
    done = 0
    while done < count and (at < len(data) if step > 0 else at > 0):
        at += step
        while 0 < at < len(data) and 0x80 <= data[at] <= 0xBF:
            at += step
        done += 1
    return at, done == count


def _substr_bytes(data: bytes, p: int, n: int, unit: str):
    """TF's Substr of one string: its bytes, or None where pos is out of range."""
    if unit == "BYTE":
        start = p + len(data) if p < 0 else p
        return None if not 0 <= start <= len(data) else data[start:start + n if n >= 0 else None]
    if p >= 0:
        start, ok = _utf8_step(data, p, 0, 1)
        return data[start:_utf8_step(data, n, start, 1)[0]] if ok else None
    skip = max(-p - n, 0)
    end, ok = _utf8_step(data, skip, len(data), -1)
    start, ok2 = _utf8_step(data, -p - skip, end, -1)
    return data[start:end] if ok and ok2 else None


@substr.kernel
def substr_kernel(x, pos, length, unit="BYTE"):
    x, pos, length = _strings(x), np.asarray(pos), np.asarray(length)
    if pos.shape != length.shape:
        raise ValueError(f"pos and len should have the same shape, got: {list(pos.shape)} vs. "
                         f"{list(length.shape)}")
    if pos.ndim and pos.shape != x.shape:   # TF broadcasts to at most 2 dimensions
        rank = len(np.broadcast_shapes(x.shape, pos.shape)) if all(
            a in (b, 1) or b == 1 for a, b in zip(x.shape[::-1], pos.shape[::-1])) else None
        if rank is None:
            raise ValueError(f"Incompatible shapes: {list(x.shape)} vs. {list(pos.shape)}")
        if rank > 2:
            raise ValueError(f"Substr broadcast not implemented for {rank} dimensions")
    x, pos, length = np.broadcast_arrays(x, pos, length)
    out = []
    for i, (s, p, n) in enumerate(zip(x.reshape(-1), pos.reshape(-1), length.reshape(-1))):
        piece = _substr_bytes(s.encode("utf-8", "surrogateescape"), int(p), int(n), unit)
        if piece is None:
            raise ValueError(f"pos {int(p)} out of range for string at index {i}")
        try:
            out.append(piece.decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError("a substring splits a UTF-8 character, which "
                             "onnxruntime-extensions' string tensors cannot carry") from None
    return _out_strings(out, x.shape)
