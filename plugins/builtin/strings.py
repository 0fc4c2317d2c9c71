"""Built-in mappings for TF's string ops: case, hashing to buckets, numbers to and from
strings, splitting, joining, substrings (opp/strings.py) and regex replacement
(opp/regex.py)."""

import numpy as np

from tf2ir.opp import regex as regex_ops
from tf2ir.opp import strings as string_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def parse_case(upper: bool):
    def parse(src, op):
        auto_mapping(src, op)
        op.set_attr("upper", upper)
        op.set_attr("encoding", src.attr("encoding", "") or "")
    return parse


def parse_static_regex(src, op):
    """StaticRegexReplace: pattern and rewrite are attributes; they become constant inputs."""
    op.add_const_input(np.array(src.attr("pattern"), object), "pattern")
    op.add_const_input(np.array(src.attr("rewrite"), object), "rewrite")
    op.set_attr("replace_global", bool(src.attr("replace_global", True)))


MAPPINGS = [
    register_op("StringCase").origin_op_type("StringLower").parse_params_fn(parse_case(False)),
    register_op("StringCase").origin_op_type("StringUpper").parse_params_fn(parse_case(True)),
    register_op("RegexReplace").origin_op_type("StaticRegexReplace")
    .parse_params_fn(parse_static_regex),
] + [register_op(op).origin_op_type(op) for op in (
    "StringToHashBucketFast", "StringToNumber", "AsString", "StringSplitV2", "StringJoin",
    "Substr", "RegexReplace")]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(string_ops.OPS) + list(regex_ops.OPS)
