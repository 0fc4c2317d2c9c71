"""tf2ir's own native kernel library: opp/native/*.cc, built at install as `tf2ir.opp._kernels`
(setup.py), the native twins of the numpy kernels of the ops that lower to tf2ir's custom
domains. Declared here as a third-party plugin declares its libraries; where the library was
not built (no C++ compiler at install), those ops run by their Python kernels."""

import os

from tf2ir import opp
from tf2ir.opp import bitwise, strings, tftext_normalize
from tf2ir.plugins import hookimpl, native_library

KERNELS_DIR = os.path.dirname(os.path.abspath(opp.__file__))
KERNELS = "_kernels"
# domain → the ops opp/native/ serves (tests/opp/test_native_kernels.py checks each against
# its Python kernel)
HASH_OPS = ("StringToHashBucketFast",)                 # opp/native/fingerprint.cc
STRING_OPS = ("StringCase", "StringSplitV2", "StringJoin", "Substr", "StringEqual")  # strings.cc
NUMBER_OPS = ("StringToNumber", "AsString")              # opp/native/numbers.cc
BITWISE_OPS = ("Bitcast",)                               # opp/native/bitwise.cc
TEXT_OPS = ("WordpieceTokenize", "FastBertNormalize", "WhitespaceTokenize",  # text.cc
            "FastWordpieceTokenize", "FastWordpieceDetokenize")      # fastwordpiece.cc
SERVED = {
    strings.DOMAIN: HASH_OPS + STRING_OPS + NUMBER_OPS,
    bitwise.DOMAIN: BITWISE_OPS,
    tftext_normalize.DOMAIN: TEXT_OPS,
}


@hookimpl
def tf2ir_native_libraries():
    return [native_library(KERNELS_DIR, KERNELS, domain, ops)
            for domain, ops in SERVED.items() if ops]
