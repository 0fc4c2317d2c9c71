"""Built-in mappings for TF's random ops: RandomUniform, RandomUniformInt, RandomStandardNormal,
TruncatedNormal, Multinomial, RandomShuffle, and the Stateless* variants, which map to the same
IR ops with their seed inputs dropped (a draw from TF's distribution, not TF's values: see
opp/random.py), with the ops making their Philox state."""

from tf2ir.opp import random as random_ops
from tf2ir.plugins import auto_mapping, hookimpl, register_op


def stateless(*kept: int):
    """A parse fn for a stateless op: keep inputs `kept` (the seed, key, counter and algorithm
    go), take the TF `dtype` attribute when the IR op declares one, and set `stateless`."""
    def parse(src, op):
        auto_mapping(src, op)
        op.inputs = [op.inputs[i] for i in kept]
        declared = op.prototype.attrs if op.prototype is not None else {}
        if "dtype" in declared and src.has_attr("dtype"):
            op.set_attr("dtype", src.attr("dtype"))
        op.set_attr("stateless", True)
    return parse


# TF op type → (IR op type, the inputs kept); shape first, minval/maxval or logits/num_samples
_STATELESS = {
    "StatelessRandomUniform": ("RandomUniform", (0,)),
    "StatelessRandomUniformV2": ("RandomUniform", (0,)),
    "StatelessRandomNormal": ("RandomStandardNormal", (0,)),
    "StatelessRandomNormalV2": ("RandomStandardNormal", (0,)),
    "StatelessTruncatedNormal": ("TruncatedNormal", (0,)),
    "StatelessTruncatedNormalV2": ("TruncatedNormal", (0,)),
    "StatelessRandomUniformInt": ("RandomUniformInt", (0, 2, 3)),
    "StatelessRandomUniformIntV2": ("RandomUniformInt", (0, 4, 5)),
    "StatelessRandomUniformFullInt": ("RandomUniformFullInt", (0,)),
    "StatelessRandomUniformFullIntV2": ("RandomUniformFullInt", (0,)),
    "StatelessMultinomial": ("Multinomial", (0, 1)),
}

MAPPINGS = (
    [register_op(tf).origin_op_type(tf) for tf in (
        "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal",
        "Multinomial", "RandomShuffle", "StatelessRandomGetKeyCounter", "StatelessRandomGetAlg",
        "StatelessRandomGetKeyCounterAlg")]
    + [register_op(ir).origin_op_type(tf).parse_params_fn(stateless(*kept))
       for tf, (ir, kept) in _STATELESS.items()]
)


@hookimpl
def tf2ir_op_mappings():
    return MAPPINGS


@hookimpl
def tf2ir_op_prototypes():
    return list(random_ops.OPS)
