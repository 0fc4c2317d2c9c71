"""`tf2ir optimize IN.onnx -o OUT.onnx [--passes ...]`: tf2ir's ONNX passes over any ONNX
model (tf2onnx's, PyTorch's, tf2ir's own); prints the node count per op type before and after.

Exit status (the one table, tools/options.EPILOG): 0 written; 1 the model cannot be read or
optimized (not ONNX, missing external data, a result onnx.checker rejects); 2 a bad option
(an unknown pass, an output that is the input or not a regular file). Nothing is written
unless the whole model is (a temporary beside OUT, checked, then renamed)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List

PASS_WORDS = "on:NAME,off:NAME"


def add_parser(subparsers) -> argparse.ArgumentParser:
    from tf2ir.tools.options import EPILOG, add_common
    parser = subparsers.add_parser(
        "optimize", help="run tf2ir's ONNX passes over any ONNX model",
        description="Run tf2ir's ONNX optimisation passes (constant folding, transpose "
                    "sinking, affine/batch-norm folding into weights, CSE, DCE, ...) over an "
                    "ONNX model from any exporter and write the result, checked by "
                    "onnx.checker. Prints the node count per op type before and after.",
        epilog=lambda: _passes_epilog() + EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", metavar="IN.onnx", help="ONNX model (external data beside it "
                                                         "is read too)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.onnx",
                        help="the optimized model (never the input)")
    parser.add_argument("--passes", action="append", default=[], metavar=PASS_WORDS,
                        help="switch the ONNX passes (listed below) on or off by name, e.g. "
                             "off:layout,off:cse (NAME 'all' is every pass; the last word "
                             "wins); repeatable")
    parser.add_argument("--check-passes", action="store_true",
                        help="check the graph after every pass and name the pass that broke it")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    add_common(parser)
    return parser


def _passes_epilog() -> str:
    from tf2ir.ir.onnx.passes import ONNX_PASSES
    from tf2ir.ir.passes.manager import describe_passes
    return f"passes (--passes; default state):\n{describe_passes(ONNX_PASSES)}\n\n"


def optimize_file(path: str, output: str, passes=None, check_passes: bool = False):
    """Optimize the ONNX model at `path` into `output`; return (counts before, counts after,
    rewrites per pass). Refuses (exit status 2) an output that is the input or one of its
    external data files, before any work is written."""
    from tf2ir.ir.atomic import check_output_path
    from tf2ir.ir.onnx.optimize import load_model, onnx_pass_manager, op_counts, optimize_model
    from tf2ir.ir.onnx.writer import write_model
    manager = onnx_pass_manager(passes, check_passes)   # a bad pass name fails first
    check_output_path(output, [path])
    check_output_path(output + ".data", [path], what="output data file")
    model, data_files = load_model(path)
    check_output_path(output, data_files)
    check_output_path(output + ".data", data_files, what="output data file")
    before = op_counts(model)
    name = os.path.basename(path)
    out, initializers, rewrites = optimize_model(model, name=name, manager=manager)
    after = op_counts(out)
    write_model(out, initializers, output)
    return before, after, rewrites


def format_counts(before: Dict[str, int], after: Dict[str, int]) -> str:
    """One line per op type: before, after; then the totals."""
    ops = sorted(set(before) | set(after), key=lambda op: (-before.get(op, 0), op))
    width = max([len(op) for op in ops] + [7])
    lines = [f"{'op type':<{width}}  {'before':>7}  {'after':>7}"]
    for op in ops:
        b, a = before.get(op, 0), after.get(op, 0)
        lines.append(f"{op:<{width}}  {b:>7}  {a:>7}{'' if a == b else f'  {a - b:+d}'}")
    total_b, total_a = sum(before.values()), sum(after.values())
    lines.append(f"{'total':<{width}}  {total_b:>7}  {total_a:>7}  {total_a - total_b:+d}")
    return "\n".join(lines)


def run(args) -> int:
    from tf2ir.ir.errors import ConversionError, ExitStatus
    import onnx
    try:
        before, after, _ = optimize_file(args.input, args.output, args.passes,
                                         args.check_passes)
    except onnx.checker.ValidationError as exc:   # (the writer names them; kept as a guard)
        raise ConversionError(f"{args.input}: the optimized model is invalid: "
                              f"{str(exc).splitlines()[0]}") from None
    if not args.quiet:
        print(format_counts(before, after))
        print(f"wrote {args.output}", file=sys.stderr)
    return ExitStatus.OK
