"""Built-in mappings for TF's Unicode and further string ops (opp/unicode.py,
opp/strings_extra.py): StringLength, UnicodeDecode(WithOffsets), UnicodeEncode,
UnicodeTranscode, Fingerprint, StringNGrams, StringStrip, ReduceJoin, StringFormat,
RegexFullMatch and StaticRegexFullMatch."""

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.opp import strings_extra, unicode
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_reduce_join(src, op):
    """A constant reduction_indices becomes attribute `axes` (the output's shape is known);
    another stays the op's second input."""
    auto_mapping(src, op)
    axes = op.inputs[1].const_value if len(op.inputs) > 1 and op.inputs[1] is not None else None
    if axes is not None:
        op.inputs = op.inputs[:1]
        op.set_attr("axes", [int(a) for a in np.asarray(axes).reshape(-1)])
    op.set_attr("keep_dims", bool(src.attr("keep_dims", False)))
    op.set_attr("separator", src.attr("separator", "") or "")


def parse_static_full_match(src, op):
    """StaticRegexFullMatch: the pattern attribute becomes a constant input."""
    op.add_const_input(np.array(src.attr("pattern"), object), "pattern")


def parse_fingerprint(src, op):
    """Fingerprint's method is an input: it must be the constant "farmhash64"."""
    method = op.inputs[1].const_value if len(op.inputs) > 1 and op.inputs[1] is not None else None
    if method is None or np.asarray(method).size != 1:
        raise ConversionError("Fingerprint: method must be one constant string")
    method = np.asarray(method, object).reshape(-1)[0]
    op.inputs = op.inputs[:1]
    op.set_attr("method", method.decode("utf-8", "replace") if isinstance(method, bytes)
                else str(method))


def parse_string_format(src, op):
    auto_mapping(src, op)
    for name, default in (("template", "%s"), ("placeholder", "%s"), ("summarize", 3)):
        op.set_attr(name, src.attr(name, default))


MAPPINGS = [
    register_op("ReduceJoin").origin_op_type("ReduceJoin").parse_params_fn(parse_reduce_join),
    register_op("RegexFullMatch").origin_op_type("StaticRegexFullMatch")
    .parse_params_fn(parse_static_full_match),
    register_op("Fingerprint").origin_op_type("Fingerprint").parse_params_fn(parse_fingerprint),
    register_op("StringFormat").origin_op_type("StringFormat")
    .parse_params_fn(parse_string_format),
] + [register_op(op).origin_op_type(op) for op in (
    "StringLength", "UnicodeDecode", "UnicodeDecodeWithOffsets", "UnicodeEncode",
    "UnicodeTranscode", "StringNGrams", "StringStrip", "RegexFullMatch")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(unicode.OPS) + list(strings_extra.OPS)
