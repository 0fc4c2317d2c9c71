"""Generates docs/ops.md, the tables of supported TensorFlow and TFLite op types, from the
plugin registry.

    python -m tf2ir.tools.optable              # regenerate docs/ops.md
    python -m tf2ir.tools.optable --check      # exit 1 if docs/ops.md is out of date
    python -m tf2ir.tools.optable -o -         # print the table

Rows come from the built-in plugins' registrations (installed third-party plugins and
TF2IR_PLUGIN_PATH are left out, so the page is the same on every machine); the tested
dtypes come from the module-level literal `TESTED_DTYPES = {"TFOpType": ("float32", ...)}`
of every tests/conformance/test_*.py, read with `ast` (the tests are not imported). The TFLite
table lists the mappings registered with framework TFLITE (keyed "TFLITE:CONV_2D" in the
manager) and the modes each is tested in, from the literal `TFLITE_TESTED = {"CONV_2D":
("float", "int8"), ...}` of every tests/conformance/test_tflite_*.py.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import glob
import os
import sys
from typing import Any, Dict, List, Optional, Set

import tf2ir

ROOT = os.path.dirname(os.path.abspath(tf2ir.__file__))
DEFAULT_OUTPUT = os.path.join(ROOT, "docs", "ops.md")
CONFORMANCE_DIR = os.path.join(ROOT, "tests", "conformance")
BUILTIN_DIR = os.path.join(ROOT, "plugins", "builtin")
REGENERATE = "python -m tf2ir.tools.optable"

# The order dtypes are listed in; unknown names follow, sorted.
DTYPE_ORDER = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
               "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128", "string")
# The TFLite conversion modes (tests/conformance/tflite_harness.py MODES), in this order.
MODE_ORDER = ("float", "dynamic", "int8", "int16", "float16")
TESTED, TFLITE_TESTED = "TESTED_DTYPES", "TFLITE_TESTED"


class _ResolveNames(ast.NodeTransformer):
    """Names of earlier module-level literals (ALL = ("float32", ...)) replaced by them."""

    def __init__(self, constants: Dict[str, ast.expr]):
        self.constants = constants

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.constants.get(node.id, node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        """ALL + ("bool",): tuples joined."""
        node = self.generic_visit(node)
        if isinstance(node.op, ast.Add) and isinstance(node.left, ast.Tuple) \
                and isinstance(node.right, ast.Tuple):
            return ast.Tuple(elts=node.left.elts + node.right.elts, ctx=ast.Load())
        return node


class TestedDtypesError(ValueError):
    """A conformance module's TESTED_DTYPES (TFLITE_TESTED) is not a literal dict of tuples
    of dtype (mode) names."""


def read_tested_dtypes(path: str, literal: str = TESTED) -> Dict[str, Set[str]]:
    """The module-level TESTED_DTYPES literal of one test file ({} when it has none);
    `literal`=TFLITE_TESTED: that literal instead (TFLite op → modes)."""
    what = "mode" if literal == TFLITE_TESTED else "dtype"
    example = '("float", "int8")' if literal == TFLITE_TESTED else '("float32", "int32")'
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    found: Dict[str, Set[str]] = {}
    constants: Dict[str, ast.expr] = {}   # module-level names bound to literals, in order
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        value = _ResolveNames(constants).visit(value)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if literal not in names:
            try:
                ast.literal_eval(value)
            except ValueError:
                continue
            constants.update((name, value) for name in names)
            continue
        try:
            table = ast.literal_eval(value)
        except ValueError:
            raise TestedDtypesError(f"{path}:{stmt.lineno}: {literal} must be a literal "
                                    "(names of module-level literals and + of tuples; no calls)") from None
        if not isinstance(table, dict):
            raise TestedDtypesError(f"{path}:{stmt.lineno}: {literal} must be a dict")
        for op_type, dtypes in table.items():
            if (not isinstance(op_type, str) or not isinstance(dtypes, (tuple, list))
                    or not all(isinstance(d, str) for d in dtypes)):
                raise TestedDtypesError(
                    f"{path}:{stmt.lineno}: {literal}[{op_type!r}] must be a tuple of "
                    f"{what} names, e.g. {example}")
            found.setdefault(op_type, set()).update(dtypes)
    return found


def collect_tested_dtypes(directory: str = CONFORMANCE_DIR, literal: str = TESTED,
                          pattern: str = "test_*.py") -> Dict[str, Set[str]]:
    """The union, per TF op type, of the TESTED_DTYPES of every test_*.py in `directory`
    (`literal`, `pattern`: another literal of other files, as collect_tflite_tested does)."""
    tested: Dict[str, Set[str]] = {}
    for path in sorted(glob.glob(os.path.join(directory, pattern))):
        for op_type, dtypes in read_tested_dtypes(path, literal).items():
            tested.setdefault(op_type, set()).update(dtypes)
    return tested


def collect_tflite_tested(directory: str = CONFORMANCE_DIR) -> Dict[str, Set[str]]:
    """The union, per TFLite op, of the TFLITE_TESTED modes of every test_tflite_*.py."""
    return collect_tested_dtypes(directory, TFLITE_TESTED, "test_tflite_*.py")


def sort_modes(modes) -> List[str]:
    rank = {m: i for i, m in enumerate(MODE_ORDER)}
    return sorted(modes, key=lambda m: (rank.get(m, len(rank)), m))


def sort_dtypes(dtypes) -> List[str]:
    rank = {d: i for i, d in enumerate(DTYPE_ORDER)}
    return sorted(dtypes, key=lambda d: (rank.get(d, len(rank)), d))


def _is_builtin(source: str) -> bool:
    return os.path.join(BUILTIN_DIR, "") in source


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def generate(tested: Optional[Dict[str, Set[str]]] = None, manager=None,
             tflite_tested: Optional[Dict[str, Set[str]]] = None) -> str:
    """The text of docs/ops.md (`tested`: TF op → dtypes, `tflite_tested`: TFLite op →
    modes; by default read from the conformance tests)."""
    from tf2ir.parser.convert import PASSTHROUGH
    from tf2ir.parser.fallback import FALLBACK_OP
    from tf2ir.plugins.manager import PluginManager
    from tf2ir.plugins.registry import TENSORFLOW, TFLITE, split_mapping_key
    manager = manager or PluginManager(use_env=False)
    tested = collect_tested_dtypes() if tested is None else tested
    tflite_tested = collect_tflite_tested() if tflite_tested is None else tflite_tested
    rows, fused, lite = {}, {}, {}
    for reg in manager.registrations:
        if not _is_builtin(reg.source):
            continue
        for key in reg.keys:   # "Conv2D", or "TFLITE:CONV_2D" for a TFLite mapping
            framework, origin = split_mapping_key(key)
            if framework == TFLITE:
                lite[origin] = reg
            elif framework != TENSORFLOW or origin == FALLBACK_OP:
                continue   # FALLBACK_OP: tf2ir's own (the fallback's segments), no TF op type
            else:
                (fused if reg.fusion else rows)[origin] = reg
    prototypes = manager.prototypes
    refused = {o: prototypes[r.ir_type].refused for o, r in rows.items()
               if r.ir_type in prototypes and prototypes[r.ir_type].refused}
    refused_rows = {o: rows.pop(o) for o in refused}
    passes = [p for p in manager.fusion_passes if _is_builtin(p.source)]
    by_converter = sorted(set(PASSTHROUGH) | {"Placeholder", "Const"})

    lines = [
        "# Supported TensorFlow op types",
        "",
        f"Generated from the plugin registry by `{REGENERATE}` (do not edit by hand; "
        f"`{REGENERATE} --check` fails when this page is out of date).",
        "",
        f"**{len(rows)} TF op types** map to {len({r.ir_type for r in rows.values()})} IR op "
        f"types through the built-in plugins; {len(passes)} scope fusion passes. "
        f"The converter itself handles {', '.join(by_converter)} "
        "(NoOp nodes carry only control dependencies and are dropped).",
        "",
        "Tested dtypes are those the conformance tests (`tests/conformance/test_*.py`, "
        "`TESTED_DTYPES`) compare against TensorFlow; — means no conformance test yet.",
        "",
        "| TF op type | IR op type | plugin | tested dtypes |",
        "|---|---|---|---|",
    ]
    for origin in sorted(rows):
        reg = rows[origin]
        dtypes = ", ".join(sort_dtypes(tested.get(origin, ()))) or "—"
        lines.append(f"| {origin} | {reg.ir_type} | {reg.plugin} | {dtypes} |")
    if refused:
        lines += ["", "## Refused op types", "",
                  "Known op types that cannot convert exactly: converting one is an "
                  "unsupported-op error (exit 3) giving this reason.", "",
                  "| TF op type | plugin | reason |", "|---|---|---|"]
        lines += [f"| {origin} | {reg.plugin} | {_cell(refused[origin])} |"
                  for origin, reg in sorted(refused_rows.items())]
    lines += [
        "",
        "## Scope fusion passes",
        "",
        "Run on the TF graph before op mapping, in this order; switch with "
        "`tf2ir convert --fusion on:NAME,off:NAME`.",
        "",
        "| pass | default | plugin | what it fuses |",
        "|---|---|---|---|",
    ]
    for p in passes:
        lines.append(f"| {p.name} | {'on' if p.enabled else 'off'} | {p.plugin} | "
                     f"{_cell(p.description)} |")
    if fused:
        lines += ["", "Fused node types and the IR op types they map to: "
                  + ", ".join(f"{o} → {fused[o].ir_type}" for o in sorted(fused)) + "."]
    unknown = sorted(set(tested) - set(rows) - set(fused) - set(by_converter))
    if unknown:
        lines += ["", "Tested but mapped by no built-in plugin: "
                  + ", ".join(f"{o} ({', '.join(sort_dtypes(tested[o]))})" for o in unknown) + "."]
    return "\n".join(lines + _tflite_lines(lite, tflite_tested)) + "\n"


def _tflite_lines(lite: Dict[str, Any], tested: Dict[str, Set[str]]) -> List[str]:
    """The TFLite section: the TFLITE mappings and the modes each is tested in."""
    from tf2ir.parser.tflite_view import DEQUANTIZE, QUANTIZE
    synthetic = [name for name in (QUANTIZE, DEQUANTIZE) if name in lite]
    lines = [
        "",
        "## TensorFlow Lite operators",
        "",
        f"**{len(lite)} TFLite op types** (builtin operators by their schema names, custom "
        "ops by their custom code) map to "
        f"{len({r.ir_type for r in lite.values()})} IR op types through the built-in "
        "plugins registered with `framework_type(\"TFLITE\")`. Every operator computes in "
        "float: a quantized tensor is a float value between synthetic quantize and "
        "dequantize nodes"
        + (f" ({' and '.join(synthetic)}, mapped like operators)" if synthetic else "")
        + ", written as ONNX QuantizeLinear/DequantizeLinear. Flex (Select TF) ops are the "
          "TensorFlow nodes they hold: the TF op types above map them.",
        "",
        "Tested modes are those the TFLite conformance tests "
        "(`tests/conformance/test_tflite_*.py`, `TFLITE_TESTED`) compare against the LiteRT "
        "interpreter: float, dynamic (dynamic-range int8 weights), int8 (full integer), "
        "int16 (16-bit activations, int8 weights), float16 (float16 weights); — means no "
        "conformance test yet.",
        "",
        "| TFLite op | IR op type | plugin | tested modes |",
        "|---|---|---|---|",
    ]
    for origin in sorted(lite):
        reg = lite[origin]
        modes = ", ".join(sort_modes(tested.get(origin, ()))) or "—"
        lines.append(f"| {origin} | {reg.ir_type} | {reg.plugin} | {modes} |")
    unknown = sorted(set(tested) - set(lite))
    if unknown:
        lines += ["", "Tested but mapped by no built-in TFLITE plugin: "
                  + ", ".join(f"{o} ({', '.join(sort_modes(tested[o]))})" for o in unknown) + "."]
    return lines


def check(path: str, text: str) -> List[str]:
    """The unified diff between `path` and the generated `text` ([] when they agree)."""
    try:
        with open(path, encoding="utf-8") as f:
            current = f.read()
    except FileNotFoundError:
        return [f"{path} does not exist"]
    if current == text:
        return []
    return list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                     f"{path} (checked in)", f"{path} (generated)", lineterm=""))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.optable", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                        help="where to write the page, - for stdout (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 with a diff if the page is out of date")
    args = parser.parse_args(argv)
    try:
        text = generate()
    except TestedDtypesError as exc:
        print(f"optable: error: {exc}", file=sys.stderr)
        return 1
    if args.check:
        diff = check(args.output, text)
        if diff:
            shown = diff[:60] + ([f"... ({len(diff) - 60} more lines)"] if len(diff) > 60 else [])
            print("\n".join(shown), file=sys.stderr)
            command = REGENERATE + ("" if args.output == DEFAULT_OUTPUT else f" -o {args.output}")
            print(f"optable: {args.output} is out of date; regenerate it with: {command}",
                  file=sys.stderr)
            return 1
        return 0
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(args.output) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
