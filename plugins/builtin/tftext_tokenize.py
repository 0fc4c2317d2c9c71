"""Built-in mappings for tensorflow-text's tokenizer ops (opp/tftext_sentencepiece.py,
opp/tftext_tokenize.py): SentencePiece (the model resource and the ops that read it),
whitespace and Unicode-script tokenization, string n-grams and the round-robin trimmer.

SentencepieceOp becomes the IR SentencepieceModel holding the ModelProto (its `model`
attribute, read as raw bytes). Each op that reads the handle (input 0) gets a copy of the model
from the SentencepieceModel its handle comes from and no longer reads the handle, as lookups
copy their table (plugins/builtin/lookup.py). TF2 freezing drops the model with the resource;
tf2ir's freezing writes it back as a SentencepieceOp node (parser/tables.py).

Refused, with one error naming the node: sampling (nbest_size other than 0 or 1, or not a
constant), return_nbest, and handles that do not come from a SentencepieceOp of the graph.
"""

from __future__ import annotations

import numpy as np

from tf2ir.ir import ConversionError
from tf2ir.ir.errors import ExitStatus
from tf2ir.opp import tftext_sentencepiece as sp_ops
from tf2ir.opp import tftext_tokenize as tok_ops
from tf2ir.plugins import hookimpl, register_op


def _unsupported(message: str) -> ConversionError:
    return ConversionError(message, exit_code=ExitStatus.UNSUPPORTED)


# -- SentencePiece -----------------------------------------------------------------------------
def parse_model(src, op):
    raw = getattr(src, "attr_bytes", None)
    data = raw("model") if raw is not None else None
    if not data:
        raise _unsupported("the SentencePiece model is not in the graph (SentencepieceOp's "
                           "'model' attribute is empty: a model read at run time cannot "
                           "convert)")
    model = np.frombuffer(data, np.uint8).copy()
    sp_ops.check_model(model)
    op.set_attr("model", model)


def _model_of(op) -> np.ndarray:
    """The model of the SentencepieceModel that `op`'s handle (input 0) comes from; the
    handle input is dropped."""
    value = op.inputs[0] if op.inputs else None
    producer = getattr(value, "producer", None)
    if producer is None or producer.op_type != "SentencepieceModel":
        raise _unsupported("the SentencePiece handle does not come from a SentencepieceOp of "
                           "this graph (with its model as an attribute)")
    op.inputs = op.inputs[1:]
    return producer.attrs["model"]


def parse_tokenize(src, op):
    if src.attr("return_nbest", False):
        raise _unsupported("return_nbest (the n best tokenizations) is not supported")
    nbest = op.inputs[2].const_value if len(op.inputs) > 2 else None
    if nbest is None:
        raise _unsupported("nbest_size must be a constant 0 or 1 (sampling off); it is "
                           "computed at run time")
    sizes = sorted(set(np.asarray(nbest).reshape(-1).tolist()))
    if any(size not in (0, 1) for size in sizes):
        raise _unsupported(f"nbest_size {sizes[-1] if sizes[-1] not in (0, 1) else sizes[0]} "
                           "samples tokenizations (SentencePiece's sampling); tf2ir converts "
                           "only nbest_size 0 or 1, where the result is deterministic")
    if src.attr("Tsplits", "int64") != "int64":
        raise _unsupported("SentencepieceTokenizeOp with int32 row splits (only int64)")
    out_type = src.attr("out_type", "int32")
    if out_type not in ("int32", "string"):
        raise _unsupported(f"SentencepieceTokenizeOp of out_type {out_type}")
    model = _model_of(op)
    handle_free = op.inputs
    op.inputs = [handle_free[0], handle_free[3], handle_free[4], handle_free[5]]
    op.set_attr("model", model)
    if out_type == "string":
        op.op_type = "SentencepieceTokenizePieces"


def parse_detokenize(src, op):
    if src.attr("T", "int32") != "int32":
        raise _unsupported(f"detokenizing pieces of dtype {src.attr('T')} (only int32 ids)")
    op.set_attr("model", _model_of(op))


def parse_with_model(src, op):
    op.set_attr("model", _model_of(op))


def parse_vocab_size(src, op):
    """Identity of the handle: the SentencepieceModel's value is its piece count."""
    value = op.inputs[0] if op.inputs else None
    if getattr(getattr(value, "producer", None), "op_type", None) != "SentencepieceModel":
        _model_of(op)       # its refusal


# -- splitting ---------------------------------------------------------------------------------
def parse_whitespace(src, op):
    config = op.inputs[1].const_value if len(op.inputs) > 1 else None
    if config is None or np.asarray(config).size != 1:
        raise _unsupported("the whitespace tokenizer's config must be a constant string")
    data = np.asarray(config).reshape(-1)[0]
    data = data if isinstance(data, bytes) else str(data).encode("utf-8", "surrogateescape")
    op.set_attr("whitespace", tok_ops.whitespace_of_config(data))
    op.inputs = op.inputs[:1]


def parse_script(src, op):
    if src.attr("Tsplits", "int64") != "int64":
        raise _unsupported("UnicodeScriptTokenizeWithOffsets with int32 splits (only int64)")
    op.set_attr("keep_whitespace", bool(src.attr("keep_whitespace", False)))


def parse_ngrams(src, op):
    axis, rank = src.attr("axis", -1), int(src.attr("RAGGED_RANK", 0))
    if axis != -1:
        raise _unsupported(f"n-grams along axis {axis} (TF's kernel takes only -1)")
    op.set_attr("width", int(src.attr("width")))
    op.set_attr("string_separator", src.attr("string_separator", ""))
    op.set_attr("RAGGED_RANK", rank)
    op.num_outputs = 1 + rank


def parse_round_robin(src, op):
    n = int(src.attr("N"))
    op.set_attr("N", n)
    op.num_outputs = 2 * n


MAPPINGS = [
    register_op("SentencepieceModel").origin_op_type("SentencepieceOp")
    .parse_params_fn(parse_model),
    register_op("SentencepieceTokenize").origin_op_type("SentencepieceTokenizeOp")
    .parse_params_fn(parse_tokenize),
    register_op("SentencepieceDetokenize").origin_op_type("SentencepieceDetokenizeOp")
    .parse_params_fn(parse_detokenize),
    register_op("SentencepieceIdToString").origin_op_type("SentencepieceIdToStringOp")
    .parse_params_fn(parse_with_model),
    register_op("SentencepieceStringToId").origin_op_type("SentencepieceStringToIdOp")
    .parse_params_fn(parse_with_model),
    register_op("Identity").origin_op_type("SentencepieceVocabSizeOp")
    .parse_params_fn(parse_vocab_size),
    register_op("WhitespaceTokenize").origin_op_type("TFText>WhitespaceTokenizeWithOffsetsV2")
    .parse_params_fn(parse_whitespace),
    register_op("UnicodeScriptTokenize").origin_op_type("UnicodeScriptTokenizeWithOffsets")
    .parse_params_fn(parse_script),
    register_op("NgramsStringJoin").origin_op_type("TFText>NgramsStringJoin")
    .parse_params_fn(parse_ngrams),
    register_op("RoundRobinTrim").origin_op_type("TFText>RoundRobinTrim")
    .parse_params_fn(parse_round_robin),
]


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(sp_ops.OPS) + list(tok_ops.OPS)
