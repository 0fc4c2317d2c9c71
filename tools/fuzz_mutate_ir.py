"""The fuzz harness's ir mutations (tools/fuzz.py): the .ir text's lines deleted, repeated,
swapped or taken from other seeds, tokens and numbers replaced, characters inserted, and
its .ir.weights truncated, extended, altered or left out."""

from __future__ import annotations

import random
import re
from typing import Dict, List

from tf2ir.tools.fuzz_core import Corpus


_IR_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|%[^\s,(){}\[\]:=]+|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?'
                       r'|[A-Za-z_][A-Za-z0-9_]*|->|\S')
IR_NUMBERS = ("0", "-1", "1", "2", "3", "-2", "64", "2147483647", "2147483648", "-2147483649",
              "4294967296", "9223372036854775807", "18446744073709551616", "99999999999999999999999",
              "1e308", "1e999", "NaN", "Infinity", "-Infinity", "-0", "0.5", "1e-400", "?", "null",
              "true", "[]", "{}", '""', "[1,2]")
IR_PIECES = ("{", "}", "(", ")", "[", "]", '"', ",", ":", "=", "%", "->", "_", "\\", "\x00",
             "\u00e9", "\ufffd", " ", "\t", "?", "*", "#", "\n", "subgraph ", "graph \"g\" {",
             "node ", "input ", "output ")
DTYPE_WORDS = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
               "uint8", "uint16", "uint32", "uint64", "bool", "string", "complex64", "complex128",
               "float", "int", "str", "ints", "floats", "tensor", "shapes", "dtype", "bool8", "")


def _mutate_ir_line(line: str, rng: random.Random, corpus: Corpus, ops: List[str]) -> str:
    tokens = list(_IR_TOKEN.finditer(line))
    choice = rng.randrange(6)
    if tokens and choice < 4:
        match = rng.choice(tokens)
        start, end = match.span()
        token = match.group()
        if choice == 0 and re.fullmatch(r"-?\d.*", token):
            new = rng.choice(IR_NUMBERS)
            ops.append("ir:number")
        elif choice == 1:
            new = rng.choice(corpus.ir_tokens)
            ops.append("ir:token")
        elif choice == 2:
            new = rng.choice(corpus.op_types) if rng.random() < 0.3 else \
                rng.choice(DTYPE_WORDS + IR_NUMBERS)
            ops.append("ir:word")
        else:
            new = rng.choice(("", token + token, token[:-1], token[1:]))
            ops.append("ir:token-edit")
        return line[:start] + new + line[end:]
    if choice == 4:   # dims of a desc
        spans = list(re.finditer(r"\[[^\]]*\]", line))
        if spans:
            m = rng.choice(spans)
            new = rng.choice(("[]", "[*]", "[?]", "[?,?]", "[-1]", "[0]", "[0,3]", "[1000000000,1000000000]",
                              "[2147483648]", "[1,2,3,4,5,6,7,8,9,10]", "[3,", "[a]", "[,]",
                              "[99999999999999999999]"))
            ops.append("ir:dims")
            return line[:m.start()] + new + line[m.end():]
    pos = rng.randrange(len(line) + 1)
    ops.append("ir:char")
    if line and rng.random() < 0.4:
        return line[:pos] + line[pos + 1:]
    return line[:pos] + rng.choice(IR_PIECES) + line[pos:]


def mutate_ir(text: str, weights: bytes, rng: random.Random, corpus: Corpus,
              ops: List[str]) -> Dict[str, bytes]:
    lines = text.split("\n")
    for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
        choice = rng.randrange(10)
        # mostly inside the graph: a broken header or graph line ends the parse at once
        inner = len(lines) > 4 and rng.random() < 0.9
        i = rng.randrange(2, len(lines) - 2) if inner else rng.randrange(len(lines)) if lines else 0
        if choice < 4 and lines:
            lines[i] = _mutate_ir_line(lines[i], rng, corpus, ops)
        elif choice == 4 and lines:
            del lines[i]
            ops.append("ir:drop-line")
        elif choice == 5 and lines:
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
            ops.append("ir:repeat-line")
        elif choice == 6 and lines:
            j = rng.randrange(2, len(lines) - 2) if inner else rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            ops.append("ir:swap-lines")
        elif choice == 7:
            lines.insert(rng.randrange(2, len(lines) - 1) if inner else rng.randrange(len(lines) + 1),
                         rng.choice(corpus.ir_lines))
            ops.append("ir:foreign-line")
        else:
            edit = rng.randrange(6)
            weights = weights or b""
            if edit == 0:
                weights = weights[:rng.randrange(len(weights) + 1)]
            elif edit == 1:
                weights = b""
            elif edit == 2 and weights:
                buf = bytearray(weights)
                for _ in range(rng.choice((1, 4, 16))):
                    buf[rng.randrange(len(buf))] = rng.randrange(256)
                weights = bytes(buf)
            elif edit == 3:
                weights = weights + bytes(rng.choice((1, 3, 64, 4096)))
            elif edit == 4:
                weights = rng.choice(corpus.irs)[2]
            else:
                weights = None
            ops.append(f"ir:weights{edit}")
    files = {".ir": "\n".join(lines).encode("utf-8", "surrogateescape")}
    if weights is not None:
        files[".ir.weights"] = weights
    return files
