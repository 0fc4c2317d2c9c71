"""Built-in mappings for tensorflow-text's normalization and WordPiece ops
(opp/tftext_normalize.py, opp/tftext_regex.py, opp/tftext_wordpiece.py,
opp/tftext_fastwordpiece.py): CaseFoldUTF8, NormalizeUTF8, FastBertNormalize,
RegexSplitWithOffsets, WordpieceTokenizeWithOffsets, FastWordpieceTokenizeWithOffsets and
FastWordpieceDetokenize.

Inputs TF-text's Python classes build as constants become attributes: the regex patterns, the
FastBertNormalizer model (a flatbuffer, read here), and the WordPiece vocabulary, which comes
from the lookup table the op's handle names (a table initialised from constants, as tf2ir's
freezing writes it: parser/tables.py).

FastWordpieceTokenizeWithOffsets and FastWordpieceDetokenize (opp/tftext_fastwordpiece.py)
take the model flatbuffer FastWordpieceTokenizer builds as a constant: it becomes the node's
`model` attribute (checked here; the kernel runs TF-text's linear WordPiece over its trie and
failure links). Detokenization needs a model built with support_detokenization (else refused,
as TF's op fails at run time)."""

from __future__ import annotations

from typing import cast

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.ir.errors import ExitStatus
from tf2ir.opp import tftext_fastwordpiece as fast_ops
from tf2ir.opp import tftext_normalize as normalize_ops
from tf2ir.opp import tftext_regex as regex_ops
from tf2ir.opp import tftext_wordpiece as wordpiece_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def _const(op, index: int, what: str) -> np.ndarray:
    value = op.inputs[index] if index < len(op.inputs) else None
    array = getattr(value, "const_value", None)
    if array is None:
        raise ConversionError(f"{op.op_type}: {what} must be a constant of the graph (TF-text's "
                              f"Python classes make it one); a run-time {what} cannot convert",
                              exit_code=ExitStatus.UNSUPPORTED)
    return np.asarray(array)


def _text(array) -> str:
    item = np.asarray(array, object).reshape(-1)
    if item.size != 1:
        raise ConversionError(f"a pattern must be one string, not {item.size}")
    value = item[0]
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def parse_normalize(src, op):
    op.set_attr("normalization_form", src.attr("normalization_form", "NFKC") or "NFKC")


def parse_bert_normalize(src, op):
    model = normalize_ops.read_bert_normalizer_model(_const(op, 1, "the normalizer model"))
    op.set_attr("trie", model["trie"])
    op.set_attr("pool", model["pool"])
    op.set_attr("data_zero", int(cast(int, model["data_zero"])))
    op.set_attr("get_offsets", bool(src.attr("get_offsets", False)))
    op.inputs = op.inputs[:1]


def parse_regex_split(src, op):
    delim = _text(_const(op, 1, "delim_regex_pattern"))
    keep = _text(_const(op, 2, "keep_delim_regex_pattern"))
    regex_ops.check_patterns(delim, keep)
    op.set_attr("delim_regex_pattern", delim)
    op.set_attr("keep_delim_regex_pattern", keep)
    op.inputs = op.inputs[:1]


def _vocabulary(op) -> np.ndarray:
    """The keys of the table behind input 1 that TF's op counts as in the vocabulary."""
    value = op.inputs[1] if len(op.inputs) > 1 else None
    table = getattr(value, "producer", None)
    if table is None or table.op_type != "LookupTable":
        raise ConversionError("the vocabulary table does not come from a table of this graph "
                              "initialised from constants (a file- or run-time-filled table "
                              "cannot convert)", exit_code=ExitStatus.UNSUPPORTED)
    keys, values = np.asarray(table.attrs["keys"]), np.asarray(table.attrs["values"])
    if keys.dtype.kind not in "OSU" or values.dtype != np.int64:
        raise ConversionError(f"the vocabulary table maps {keys.dtype} to {values.dtype}; "
                              f"TF-text's WordPiece needs string keys and int64 values")
    words = [k.decode("utf-8", "surrogateescape") if isinstance(k, bytes) else str(k)
             for k, v in zip(keys.reshape(-1), values.reshape(-1)) if int(v) != -1]
    out = np.empty(len(words), object)
    out[:] = words
    return out


def parse_wordpiece(src, op):
    auto_mapping(src, op)
    op.set_attr("vocab", _vocabulary(op))
    op.inputs = op.inputs[:1]


def _fast_model(op, index: int):
    model = _const(op, index, "the WordPiece model")
    if model.dtype != np.uint8 or model.ndim != 1:
        raise ConversionError(f"{op.op_type}: the WordPiece model is a {model.dtype} tensor of "
                              f"rank {model.ndim}, not 1-D uint8")
    return model


def parse_fast_wordpiece(src, op):
    op.set_attr("model", _fast_model(op, 1))
    op.inputs = op.inputs[:1]


def parse_fast_detokenize(src, op):
    op.set_attr("model", _fast_model(op, 2))
    op.inputs = op.inputs[:2]


MAPPINGS = [
    register_op("CaseFoldUTF8").origin_op_type("CaseFoldUTF8"),
    register_op("NormalizeUTF8").origin_op_type("NormalizeUTF8").parse_params_fn(parse_normalize),
    register_op("FastBertNormalize").origin_op_type("FastBertNormalize")
    .parse_params_fn(parse_bert_normalize),
    register_op("RegexSplitWithOffsets").origin_op_type("RegexSplitWithOffsets")
    .parse_params_fn(parse_regex_split),
    register_op("WordpieceTokenize").origin_op_type("WordpieceTokenizeWithOffsets")
    .parse_params_fn(parse_wordpiece),
    register_op("FastWordpieceTokenize").origin_op_type("FastWordpieceTokenizeWithOffsets")
    .parse_params_fn(parse_fast_wordpiece),
    register_op("FastWordpieceDetokenize").origin_op_type("TFText>FastWordpieceDetokenize")
    .parse_params_fn(parse_fast_detokenize),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return (list(normalize_ops.OPS) + list(regex_ops.OPS) + list(wordpiece_ops.OPS)
            + list(fast_ops.OPS))
