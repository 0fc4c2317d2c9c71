"""Writes parser/op_outputs.py, the output args of every op in TensorFlow's op registry (with
tensorflow-text's ops registered too), which parser/functions.py reads to turn a FunctionDef's
"node:out_arg:i" into a flat output index.

    python -m tf2ir.tools.gen_op_outputs            # write parser/op_outputs.py and its parts
    python -m tf2ir.tools.gen_op_outputs --check    # compare the committed file with the registry

The tables are plain literals, importable without TensorFlow, split into parts
(parser/op_outputs_<n>.py) that parser/op_outputs.py merges, as each module stays within the
450-line limit of tests/test_layers.py:
OUTPUTS — op type → its output args in order, for every op whose outputs are not exactly one
single-tensor arg: (name, None) one tensor, (name, attr) a list of tensors, as many as the node's
int attr `attr` says (an OpDef's number_attr) or as its type-list attr `attr` has types (a
type_list_attr); ops with no outputs map to ().
SINGLE — output arg name → the op types (space-separated) whose one output is that single tensor.
COUNT_DEFAULTS — op type → {count attr: the list size its OpDef's default gives}, for a node that
leaves the attr out (SavedModels strip attrs at their defaults).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARSER = os.path.join(ROOT, "parser")
WIDTH = 100
PART_LINES = 440   # tests/test_layers.py keeps parser/ modules within 450 lines
Args = Tuple[Tuple[str, Optional[str]], ...]


_REGISTRY_CHILD = """
import sys
import tensorflow as tf
import tensorflow_text
from tensorflow.core.framework import op_def_pb2
from tensorflow.python.client import pywrap_tf_session
from tensorflow.python.framework import op_def_registry
op_list = op_def_pb2.OpList()
op_list.ParseFromString(pywrap_tf_session.TF_GetBuffer(pywrap_tf_session.TF_GetAllOpList()))
fresh = op_def_pb2.OpList()
# op_def_registry is the registry's Python face; it answers for every op the list holds
fresh.op.extend(op_def_registry.get(op.name) or op for op in op_list.op)
sys.stdout.buffer.write(f"{tf.__version__} {tensorflow_text.__version__}\\n".encode())
sys.stdout.buffer.write(fresh.SerializeToString())
"""


def registry() -> Tuple[list, str, str]:
    """Every OpDef TensorFlow and tensorflow_text register when imported, with their
    versions: read in a fresh interpreter, so that ops a process registers later (TFLite's
    converter registers TFLite_Detection_PostProcess, a test its own) never enter the table."""
    import subprocess
    from tensorboard.compat.proto import op_def_pb2
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", _REGISTRY_CHILD], capture_output=True,
                          env=env, check=True)
    head, _, body = done.stdout.partition(b"\n")
    tf_version, text_version = head.decode().split()
    op_list = op_def_pb2.OpList()
    op_list.ParseFromString(body)
    return list(op_list.op), tf_version, text_version


def output_args(op_def) -> Args:
    """An OpDef's output args: (name, None) for one tensor, (name, count attr) for a list."""
    return tuple((arg.name, arg.number_attr or arg.type_list_attr or None)
                 for arg in op_def.output_arg)


def tables(op_defs) -> Tuple[Dict[str, Args], Dict[str, List[str]], Dict[str, Dict[str, int]]]:
    """(OUTPUTS, SINGLE, COUNT_DEFAULTS) as the generated module holds them."""
    outputs: Dict[str, Args] = {}
    single: Dict[str, List[str]] = {}
    defaults: Dict[str, Dict[str, int]] = {}
    for op_def in sorted(op_defs, key=lambda o: o.name):
        args = output_args(op_def)
        if len(args) == 1 and args[0][1] is None:
            single.setdefault(args[0][0], []).append(op_def.name)
            continue
        outputs[op_def.name] = args
        counts = {count for _, count in args if count}
        for attr in op_def.attr:
            if attr.name in counts and attr.HasField("default_value"):
                value = attr.default_value
                size = value.i if value.WhichOneof("value") == "i" else len(value.list.type)
                defaults.setdefault(op_def.name, {})[attr.name] = size
    return outputs, single, defaults


def _packed(items: List[str], indent: str = "    ", width: int = WIDTH) -> List[str]:
    """`items` joined on lines no wider than `width` (an item longer stays whole)."""
    lines: List[str] = []
    line = ""
    for item in items:
        if line and len(indent) + len(line) + 1 + len(item) > width:
            lines.append(indent + line)
            line = item
        else:
            line = f"{line} {item}" if line else item
    if line:
        lines.append(indent + line)
    return lines


def _single_entry(name: str, ops: List[str]) -> List[str]:
    """A SINGLE entry; long ones go on as strings on further lines (implicit concatenation)."""
    head = f"{name!r}: "
    words = _packed(ops, "", WIDTH - 4 - len(head) - 3)
    last = len(words) - 1
    return [(head if i == 0 else " " * len(head)) + repr(chunk + ("" if i == last else " "))
            + ("," if i == last else "") for i, chunk in enumerate(words)]


def blocks(outputs: Dict[str, Args], single: Dict[str, List[str]]) -> List[Tuple[str, List[str]]]:
    """(table, lines) in order, each block either one line of packed entries or one entry
    that takes several lines; a part module holds whole blocks."""
    entries: List[Tuple[str, List[str]]] = []
    for op, args in outputs.items():
        body = ", ".join(f"({name!r}, {count!r})" for name, count in args)
        entries.append(("OUTPUTS", [f"{op!r}: ({body}{',' if len(args) == 1 else ''}),"]))
    for name, ops in sorted(single.items(), key=lambda item: (-len(item[1]), item[0])):
        entries.append(("SINGLE", _single_entry(name, ops)))
    result: List[Tuple[str, List[str]]] = []
    run: List[str] = []
    for i, (table, lines) in enumerate(entries):
        if len(lines) == 1:
            run.append(lines[0])
        else:
            result.append((table, ["    " + line for line in lines]))
        if run and (len(lines) > 1 or i + 1 == len(entries) or entries[i + 1][0] != table):
            result.extend((table, [line]) for line in _packed(run))
            run = []
    return result


def render(outputs: Dict[str, Args], single: Dict[str, List[str]],
           defaults: Dict[str, Dict[str, int]], tf_version: str, text_version: str
           ) -> Dict[str, str]:
    """file name (in parser/) → text: op_outputs.py, which merges its parts, and the parts
    op_outputs_<n>.py, whose OUTPUTS and SINGLE literals each stay within the module limit."""
    parts: List[Dict[str, List[str]]] = []
    used = PART_LINES
    for table, lines in blocks(outputs, single):
        if used + len(lines) > PART_LINES:
            parts.append({"OUTPUTS": [], "SINGLE": []})
            used = 0
        parts[-1][table].extend(lines)
        used += len(lines)
    files = {}
    for n, part in enumerate(parts, 1):
        files[f"op_outputs_{n}.py"] = "\n".join(
            [f'"""Part {n} of parser/op_outputs.py\'s tables, generated by '
             f'`python -m tf2ir.tools.gen_op_outputs`:',
             'do not edit."""', "", "OUTPUTS = {", *part["OUTPUTS"], "}", "",
             "SINGLE = {", *part["SINGLE"], "}", ""])
    names = [f"op_outputs_{n}" for n in range(1, len(parts) + 1)]
    files["op_outputs.py"] = "\n".join([
        '"""Generated by `python -m tf2ir.tools.gen_op_outputs` from the op registry of '
        'TensorFlow',
        f"{tf_version} with tensorflow-text {text_version}'s ops registered: do not edit "
        "(`--check` compares",
        "it with the registry). parser/functions.py reads it to place a FunctionDef's",
        '"node:out_arg:i" among a node\'s outputs. The tables are plain literals, in parts '
        "that stay",
        "within the module size limit; importing them needs no TensorFlow.",
        "",
        "OUTPUTS: op type → its output args in order, for each op whose outputs are not one",
        "single-tensor arg: (name, None) one tensor; (name, attr) a list of as many tensors as "
        "the",
        "node's int attr `attr` says (number_attr) or as its type-list attr `attr` holds types",
        "(type_list_attr). An op with no outputs maps to ().",
        "SINGLE: output arg name → the op types (space-separated) whose one output is that "
        "tensor.",
        "COUNT_DEFAULTS: op type → the list size its OpDef gives a count attr that a node may "
        "leave out",
        "(a SavedModel strips attrs at their defaults).",
        '"""',
        "",
        f"from tf2ir.parser import {', '.join(names)}",
        "",
        f"TF_VERSION = {tf_version!r}",
        f"TEXT_VERSION = {text_version!r}",
        f"PARTS = {tuple(name + '.py' for name in names)!r}",
        "OUTPUTS = {" + ", ".join(f"**{name}.OUTPUTS" for name in names) + "}",
        "SINGLE = {" + ", ".join(f"**{name}.SINGLE" for name in names) + "}",
        "COUNT_DEFAULTS = {",
        *_packed([f"{op!r}: {sizes!r}," for op, sizes in defaults.items()]),
        "}",
        ""])
    return files


def differences(committed, fresh) -> List[str]:
    """What the committed (OUTPUTS, SINGLE, COUNT_DEFAULTS) say differently from the
    registry's, one line per op."""
    def flat(triple) -> Dict[str, tuple]:
        outputs, single, defaults = triple
        table = {op: (tuple(map(tuple, args)), defaults.get(op, {}))
                 for op, args in outputs.items()}
        for name, ops in single.items():
            for op in (ops.split() if isinstance(ops, str) else ops):
                table[op] = (((name, None),), {})
        return table
    old, new = flat(committed), flat(fresh)
    return [f"{op}: committed {old.get(op)}, registry {new.get(op)}"
            for op in sorted(set(old) | set(new)) if old.get(op) != new.get(op)]


def write(files: Dict[str, str], folder: str = PARSER) -> None:
    """Write the module and its parts into `folder`, removing parts left from a longer table."""
    for name in os.listdir(folder):
        if re.fullmatch(r"op_outputs_\d+\.py", name) and name not in files:
            os.remove(os.path.join(folder, name))
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare the committed parser/op_outputs.py with the registry")
    args = parser.parse_args(argv)
    op_defs, tf_version, text_version = registry()
    outputs, single, defaults = tables(op_defs)
    if not args.check:
        files = render(outputs, single, defaults, tf_version, text_version)
        write(files)
        print(f"wrote parser/op_outputs.py and {len(files) - 1} parts: {len(outputs)} ops in "
              f"OUTPUTS, {sum(map(len, single.values()))} in SINGLE")
        return 0
    from tf2ir.parser import op_outputs
    diff = differences((op_outputs.OUTPUTS, op_outputs.SINGLE, op_outputs.COUNT_DEFAULTS),
                       (outputs, single, defaults))
    versions = (f"committed from TensorFlow {op_outputs.TF_VERSION} / tensorflow-text "
                f"{op_outputs.TEXT_VERSION}, registry of {tf_version} / {text_version}")
    if diff:
        print(f"parser/op_outputs.py differs from the op registry ({versions}); "
              f"`python -m tf2ir.tools.gen_op_outputs` rewrites it:")
        print("\n".join(diff))
        return 1
    print(f"parser/op_outputs.py agrees with the op registry ({versions})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
