"""tensorflow-text's SentencePiece ops. TF holds the model in a resource (SentencepieceOp, the
serialized ModelProto as its `model` attribute); here the model is the IR op
SentencepieceModel, whose attribute `model` (a 1-D uint8 tensor) holds the proto and whose one
value is its piece count (SentencepieceVocabSizeOp reads that value). The plugin
(plugins/builtin/tftext_tokenize.py) copies the model into each op that reads the handle, which
then no longer reads it.

- SentencepieceTokenize (ids) and SentencepieceTokenizePieces (out_type string): each
  string's tokens and the row splits, sampling off (TF's nbest_size 0 or 1: SentencePiece's
  Encode; a sampling setting is refused when the graph is converted), add_bos, add_eos and
  reverse as TF's extra options.
- SentencepieceDetokenize, SentencepieceIdToString, SentencepieceStringToId.

Every op lowers to one node of the domain `ai.tf2ir.text`, run by its Python kernel, which
uses the `sentencepiece` package (SentencePiece's own Encode and Decode, as TF's kernels),
imported when a kernel first runs; without it the kernel fails with one message saying so.
onnxruntime-extensions' SentencepieceTokenizer gives TF's ids too, but its session crashes
(a segmentation fault, 0.15.2) in a process that has loaded TensorFlow, as `tf2ir convert
--verify` and the tests do.
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np

from tf2ir.ir import ConversionError, OpSet, TensorDesc
from tf2ir.opp.strings import _out_strings, _strings
from tf2ir.opp.custom_domain import kernel_lowering

OPS = OpSet("tf2ir.opp.tftext_sentencepiece")
DOMAIN = "ai.tf2ir.text"
STRING, BOOL, INT32 = ("string",), ("bool",), ("int32",)
SPLITS = ("int32", "int64")
MAX_MODEL_BYTES = 1 << 30


def model_bytes(model) -> bytes:
    """The serialized ModelProto an attribute holds (uint8 tensor, bytes or str)."""
    if isinstance(model, np.ndarray):
        return model.astype(np.uint8, copy=False).tobytes()
    if isinstance(model, str):
        return model.encode("utf-8", "surrogateescape")
    return bytes(model)


def _varint(data: bytes, pos: int):
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def piece_count(data: bytes) -> int:
    """The number of pieces (ModelProto field 1) of a serialized SentencePiece model, read
    from the protobuf wire format; ValueError when the bytes are not a model."""
    pos, count = 0, 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            size, pos = _varint(data, pos)
            pos += size
            count += field == 1
        else:
            raise ValueError(f"wire type {wire} is not a SentencePiece model's")
        if pos > len(data) or field == 0:
            raise ValueError("not a serialized SentencePiece model")
    if count == 0:
        raise ValueError("the SentencePiece model has no pieces")
    return count


def check_model(model) -> int:
    """ConversionError unless `model` holds a SentencePiece ModelProto; its piece count."""
    data = model_bytes(model)
    if not 0 < len(data) <= MAX_MODEL_BYTES:
        raise ConversionError(f"a SentencePiece model of {len(data)} bytes is not a model")
    try:
        return piece_count(data)
    except ValueError as exc:
        raise ConversionError(f"the SentencePiece model attribute is not a model: {exc}") \
            from None


# -- the processors the kernels use, one per model ---------------------------------------------
_PROCESSORS: dict = {}
_LOCK = threading.Lock()


def processor(model):
    """A SentencePieceProcessor of `model`, cached by the model's digest."""
    data = model_bytes(model)
    key = hashlib.sha256(data).digest()
    with _LOCK:
        found = _PROCESSORS.get(key)
        if found is not None:
            return found
    try:
        import sentencepiece
    except ImportError:
        raise RuntimeError("running a SentencePiece op by tf2ir's Python kernel needs the "
                           "'sentencepiece' package (pip install sentencepiece)") from None
    made = sentencepiece.SentencePieceProcessor()
    try:
        made.LoadFromSerializedProto(data)
    except Exception as exc:  # noqa: BLE001 - SentencePiece's own error, any type
        raise ValueError(f"the SentencePiece model does not load: {exc}") from None
    with _LOCK:
        _PROCESSORS[key] = made
    return made


def extra_options(add_bos, add_eos, reverse) -> tuple:
    """TF's extra options (HandleExtraOptions): bos, eos, reverse, in the order SentencePiece
    applies them (so reverse moves bos to the end)."""
    return tuple(name for name, on in (("bos", _flag(add_bos)), ("eos", _flag(add_eos)),
                                       ("reverse", _flag(reverse))) if on)


def apply_options(sp, rows: list, options: tuple, pieces: bool) -> list:
    """SentencePiece's ApplyExtraOptions on each row of ids (or pieces)."""
    for option in options:
        if option == "reverse":
            rows = [row[::-1] for row in rows]
            continue
        index = sp.bos_id() if option == "bos" else sp.eos_id()
        if index < 0:
            raise ValueError(f"the SentencePiece model defines no {option} id")
        token = sp.IdToPiece(index) if pieces else index
        rows = [[token] + row for row in rows] if option == "bos" else \
            [row + [token] for row in rows]
    return rows


def _flag(value) -> bool:
    array = np.asarray(value).reshape(-1)
    if array.size != 1:
        raise ValueError(f"add_bos, add_eos and reverse must be scalars, not {array.size} values")
    return bool(array[0])


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _text(piece) -> str:
    return piece.decode("utf-8", "surrogateescape") if isinstance(piece, bytes) else piece


def _model_as_bytes(attrs):
    if "model" in attrs:    # the proto as a bytes (STRING) attribute, not a list of ints
        attrs["model"] = model_bytes(attrs["model"])
    return attrs


_lower_by_kernel = kernel_lowering(OPS, DOMAIN, _model_as_bytes)

def _model_attr(node) -> None:
    check_model(node.attrs["model"])


# -- SentencepieceModel -------------------------------------------------------------------------
sp_model = (OPS.declare("SentencepieceModel", "A SentencePiece model (`model`: the serialized "
                        "ModelProto as a uint8 tensor); its value is its piece count.")
            .output("size", ("int32",)).attr("model", "tensor"))


@sp_model.infer
def _infer_model(node):
    _model_attr(node)
    return [TensorDesc("int32", ())]


@sp_model.kernel
def sentencepiece_size(model=None):
    return np.array(piece_count(model_bytes(model)), np.int32)


@sp_model.lower
def _lower_model(ctx, node):
    size = np.array(piece_count(model_bytes(node.attrs["model"])), np.int32)
    ctx.op.Identity(ctx.constant(size), out=ctx.output(0))


# -- SentencepieceTokenize ------------------------------------------------------------------------
def _declare_tokenize(op_type: str, values: str, what: str):
    return (OPS.declare(op_type, f"Each string's SentencePiece {what} as flat values and row "
                                 "splits; sampling off.")
            .input("input", STRING).input("add_bos", BOOL).input("add_eos", BOOL)
            .input("reverse", BOOL).output("values", (values,)).output("splits", ("int64",))
            .attr("model", "tensor"))


tokenize = _declare_tokenize("SentencepieceTokenize", "int32", "ids")
tokenize_pieces = _declare_tokenize("SentencepieceTokenizePieces", "string", "pieces")


def _infer_tokenize(dtype: str):
    def infer(node):
        _model_attr(node)
        return [TensorDesc(dtype, (None,)), TensorDesc("int64", (None,))]
    return infer


tokenize.infer(_infer_tokenize("int32"))
tokenize_pieces.infer(_infer_tokenize("string"))
tokenize.lower(_lower_by_kernel)
tokenize_pieces.lower(_lower_by_kernel)


def _encode(x, add_bos, add_eos, reverse, model, out_type):
    """The rows of SentencePiece's Encode (TF's extra options) of each string, and splits."""
    sp = processor(model)
    texts = [_bytes(s) for s in _strings(x).reshape(-1)]
    rows = sp.encode(texts, out_type=out_type) if texts else []
    rows = apply_options(sp, rows, extra_options(add_bos, add_eos, reverse), out_type is str)
    splits = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=splits[1:])
    return [t for r in rows for t in r], splits


@tokenize.kernel
def sentencepiece_tokenize(x, add_bos, add_eos, reverse, model=None):
    flat, splits = _encode(x, add_bos, add_eos, reverse, model, int)
    return np.array(flat, np.int32), splits


@tokenize_pieces.kernel
def sentencepiece_tokenize_pieces(x, add_bos, add_eos, reverse, model=None):
    flat, splits = _encode(x, add_bos, add_eos, reverse, model, str)
    return _out_strings([_text(t) for t in flat], (len(flat),)), splits


# -- SentencepieceDetokenize ------------------------------------------------------------------------
detokenize = (OPS.declare("SentencepieceDetokenize", "Each row of ids (values, splits) decoded "
                          "to its string.")
              .input("values", INT32).input("splits", SPLITS).input("add_bos", BOOL)
              .input("add_eos", BOOL).input("reverse", BOOL).output("output", STRING)
              .attr("model", "tensor"))


@detokenize.infer
def _infer_detokenize(node):
    _model_attr(node)
    return [TensorDesc("string", (None,))]


detokenize.lower(_lower_by_kernel)


@detokenize.kernel
def sentencepiece_detokenize(values, splits, add_bos, add_eos, reverse, model=None):
    sp = processor(model)
    values, splits = np.asarray(values).reshape(-1), np.asarray(splits).reshape(-1)
    if splits.size == 0 or splits[0] != 0 or np.any(np.diff(splits) < 0) \
            or splits[-1] > values.size:
        raise ValueError("the row splits do not fit the values")
    size = sp.GetPieceSize()
    if values.size and (values.min() < 0 or values.max() >= size):
        raise ValueError(f"an id is out of range [0, {size})")
    rows = [[int(i) for i in values[a:b]] for a, b in zip(splits[:-1], splits[1:])]
    rows = apply_options(sp, rows, extra_options(add_bos, add_eos, reverse), False)
    out = sp.decode(rows, out_type=bytes) if rows else []
    return _out_strings([_text(o) for o in out], (len(out),))


# -- ids ↔ pieces -----------------------------------------------------------------------------------
id_to_string = (OPS.declare("SentencepieceIdToString", "The piece of each id.")
                .input("input", INT32).output("values", STRING).attr("model", "tensor"))
string_to_id = (OPS.declare("SentencepieceStringToId", "The id of each piece (unknown: the "
                            "unk id).")
                .input("input", STRING).output("values", INT32).attr("model", "tensor"))


@id_to_string.infer
def _infer_id_to_string(node):
    _model_attr(node)
    return [TensorDesc("string", node.inputs[0].desc.shape)]


@string_to_id.infer
def _infer_string_to_id(node):
    _model_attr(node)
    return [TensorDesc("int32", node.inputs[0].desc.shape)]


id_to_string.lower(_lower_by_kernel)
string_to_id.lower(_lower_by_kernel)


@id_to_string.kernel
def sentencepiece_id_to_string(x, model=None):
    sp = processor(model)
    x = np.asarray(x)
    size = sp.GetPieceSize()
    if x.size and (x.min() < 0 or x.max() >= size):
        raise ValueError(f"an id is out of range [0, {size})")
    return _out_strings([_text(sp.IdToPiece(int(i))) for i in x.reshape(-1)], x.shape)


@string_to_id.kernel
def sentencepiece_string_to_id(x, model=None):
    sp = processor(model)
    x = _strings(x)
    return np.array([sp.PieceToId(s) for s in x.reshape(-1)], np.int32).reshape(x.shape)
