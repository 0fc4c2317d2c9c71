"""The `tf2ir` command line: convert, compile, check, plugins and more."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from typing import List, Optional

from tf2ir.ir.errors import ExitStatus
from tf2ir.tools.options import (
    EPILOG, MODEL_HELP, add_common, add_fusion_option, add_model_source, add_pass_options,
    add_shape_options, passes_epilog, pipeline_from_args, plugin_manager,
)

log = logging.getLogger("tf2ir")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tf2ir", description="Convert TensorFlow models to an IR and compile it to ONNX.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    convert = sub.add_parser(
        "convert", help="convert a frozen TF graph (.pb/.pbtxt) to ONNX or to IR",
        description="Convert a frozen TensorFlow GraphDef (.pb binary or .pbtxt text) into "
                    "an ONNX model (default) or into tf2ir's text IR with a weights file.",
        epilog=passes_epilog() + EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    convert.add_argument("model", help=MODEL_HELP)
    convert.add_argument("-o", "--output", required=True, help="output file (.onnx or .ir)")
    convert.add_argument("--emit", choices=("onnx", "ir"), default=None,
                         help="what to write (default: from the output's extension, else onnx)")
    add_shape_options(convert)
    add_fusion_option(convert)
    add_pass_options(convert)
    convert.add_argument("--verify", action="store_true",
                         help="run TensorFlow and onnxruntime on random inputs and compare "
                              "(exit 4 on a mismatch; the output file is kept)")
    add_common(convert)
    add_model_source(convert)

    compile_ = sub.add_parser(
        "compile", help="compile a saved IR (.ir + .ir.weights) to ONNX",
        description="Verify a saved tf2ir IR file against the op prototypes and compile it to ONNX.",
        epilog=passes_epilog() + EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    compile_.add_argument("ir", help="IR text file written by `tf2ir convert --emit ir`")
    compile_.add_argument("-o", "--output", required=True, help="output .onnx file")
    add_pass_options(compile_)
    add_common(compile_)

    plugins = sub.add_parser("plugins", help="list the registered op mapping plugins",
                             description="List every origin TF op type with the IR op type and "
                                         "plugin that maps it.")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    add_common(plugins)

    from tf2ir.tools import verify
    verify.add_parser(sub)

    new_plugin = sub.add_parser(
        "new-plugin", help="write an installable plugin package for a TF op type",
        description="Write NAME/ (setup.cfg with the tf2ir entry point, a plugin module and a "
                    "passing test) mapping TF op type --origin-op to an IR op. Then: pip install NAME/")
    new_plugin.add_argument("name", help="package name, e.g. my_ops")
    new_plugin.add_argument("--origin-op", required=True, metavar="TYPE", help="TF op type to map")
    new_plugin.add_argument("--ir-op", metavar="TYPE",
                            help="map to this existing IR op (default: declare a new IR op named TYPE)")
    new_plugin.add_argument("-o", "--out-dir", default=".", help="where to create NAME/")
    new_plugin.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    from tf2ir.tools import batch
    batch.add_parser(sub)
    from tf2ir.tools import check
    check.add_parser(sub)
    return parser


def _timed(phases, name):
    class _Timer:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            phases[name] = time.perf_counter() - self.start
            log.info("%-8s %.3f s", name, phases[name])
    return _Timer()


def cmd_convert(args) -> int:
    emit = args.emit or ("ir" if args.output.endswith(".ir") else "onnx")
    from tf2ir.tools.progress import PhaseLine, wanted
    phases = {}
    with _timed(phases, "plugins"):
        manager = plugin_manager(args)
    pipeline = pipeline_from_args(args, manager)   # bad options fail before any work
    with PhaseLine(wanted(args.quiet or args.verbose)) as progress:   # -v logs phases itself
        return _convert(args, emit, pipeline, progress)


def _convert(args, emit, pipeline, progress) -> int:
    from tf2ir.ir.text import save

    phases = {}
    progress.phase(f"converting {os.path.basename(args.model.rstrip(os.sep))}")
    graph, report = pipeline.convert_file(args.model)
    progress.phase(f"{'saving' if emit == 'ir' else 'compiling'} {report.ir_nodes} IR nodes")
    with _timed(phases, "save" if emit == "ir" else "compile"):
        if emit == "ir":
            save(graph, args.output)
        else:
            pipeline.compile(graph, args.output, model=args.model)
    progress.close()
    for override in pipeline.manager.overrides_for(report.op_types):
        if not args.quiet:
            print(f"tf2ir: note: {override}", file=sys.stderr)   # never silent, unless asked
    for name, seconds in report.phases.items():
        log.info("%-8s %.3f s", name, seconds)
    for name, count in report.fusions.items():
        log.info("fused    %s: %d match%s", name, count, "es" if count > 1 else "")
    log.info("%d TF nodes, %d kept, %d IR nodes -> %s", report.tf_nodes, report.kept_nodes,
             report.ir_nodes, args.output)
    if getattr(args, "verify", False):
        from tf2ir.tools.verify import verify_after_convert
        return verify_after_convert(args, report, graph, emit, progress)
    return ExitStatus.OK


def cmd_compile(args) -> int:
    from tf2ir.ir.infer import infer_graph
    from tf2ir.ir.text import load

    phases = {}
    pipeline = pipeline_from_args(args)   # its plugins declare the IR's op prototypes
    with _timed(phases, "load"):
        graph = load(args.ir)
    with _timed(phases, "verify"):
        infer_graph(graph, model=args.ir)
    with _timed(phases, "compile"):
        pipeline.compile(graph, args.output, model=args.ir)
    return ExitStatus.OK


def cmd_plugins(args) -> int:
    import json
    manager = plugin_manager(args)
    rows = []
    for origin in sorted(manager.registry):
        reg = manager.registry[origin]
        overrides = [str(o) for o in manager.overrides if o.origin_type == origin]
        rows.append({"origin_op_type": origin, "ir_op_type": reg.ir_type, "plugin": reg.plugin,
                     "source": reg.source, "imply_type": reg.imply, "priority": reg.priority,
                     "overrides": overrides})
    if args.json:
        print(json.dumps(rows, indent=2))
        return ExitStatus.OK
    width = max((len(r["origin_op_type"]) for r in rows), default=10)
    ir_width = max((len(r["ir_op_type"]) for r in rows), default=10)
    print(f"{'ORIGIN OP TYPE':<{width}}  {'IR OP TYPE':<{ir_width}}  {'IMPLY':<7}  PLUGIN")
    for r in rows:
        note = f"  (overrides: {'; '.join(r['overrides'])})" if r["overrides"] else ""
        print(f"{r['origin_op_type']:<{width}}  {r['ir_op_type']:<{ir_width}}  "
              f"{r['imply_type']:<7}  {r['plugin']}{note}")
    print(f"{len(rows)} origin op types")
    foreign = sorted(p for p, proto in manager.prototypes.items()
                     if not proto.plugin.startswith("builtin_"))
    print(f"{len(manager.prototypes)} IR op prototypes"
          + (f" ({', '.join(foreign)} from plugins)" if foreign else ""))
    for override in manager.prototype_overrides:
        print(f"override: {override}")
    for p in manager.fusion_passes:   # in run order
        print(f"fusion pass {p.name:<12} {'on ' if p.enabled else 'off'}  {p.plugin}  {p.description}")
    return ExitStatus.OK


def cmd_new_plugin(args) -> int:
    from tf2ir.tools.scaffold import write_plugin_package
    root = write_plugin_package(args.name, args.origin_op, args.out_dir, args.ir_op)
    print(f"wrote {root}: pip install {root} && tf2ir plugins | grep {args.origin_op}")
    return ExitStatus.OK


def cmd_verify(args) -> int:
    from tf2ir.tools.verify import run
    return run(args)


def cmd_check(args) -> int:
    from tf2ir.tools.check import run
    return run(args)


def cmd_batch(args) -> int:
    from tf2ir.tools.batch import run
    return run(args)


COMMANDS = {"convert": cmd_convert, "compile": cmd_compile, "plugins": cmd_plugins,
            "new-plugin": cmd_new_plugin, "batch": cmd_batch, "verify": cmd_verify,
            "check": cmd_check}


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    quiet = getattr(args, "quiet", False)
    if quiet:
        import warnings
        warnings.simplefilter("ignore")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    logging.basicConfig(level=logging.ERROR if quiet else
                        logging.INFO if args.verbose else logging.WARNING,
                        format="tf2ir: %(message)s", stream=sys.stderr)
    from tf2ir.ir.errors import ConversionError
    output = getattr(args, "output", None)
    try:
        return COMMANDS[args.command](args)
    except ConversionError as exc:
        if args.verbose:
            import traceback
            traceback.print_exc()
        print(f"tf2ir: error: {exc}", file=sys.stderr)
        _remove_partial(output)
        return exc.exit_code
    except OSError as exc:
        if args.verbose:
            import traceback
            traceback.print_exc()
        where = f" {exc.filename}" if exc.filename else ""
        print(f"tf2ir: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        _remove_partial(output)
        return ExitStatus.FAILED
    except KeyboardInterrupt:
        _remove_partial(output)
        return ExitStatus.SIGINT
    except Exception as exc:  # a bug in tf2ir: still one line, the traceback with -v
        if args.verbose:
            import traceback
            traceback.print_exc()
        model = getattr(args, "model", None) or getattr(args, "ir", None)
        print(f"tf2ir: error: internal error while handling {model}: {type(exc).__name__}: {exc} "
              "(run with -v for the traceback)", file=sys.stderr)
        _remove_partial(output)
        return ExitStatus.FAILED


def _remove_partial(output: Optional[str]) -> None:
    """Writers go through temp files; this only guards against anything left behind."""
    if output:
        for path in (output + ".tmp",):
            if os.path.exists(path):
                os.remove(path)


if __name__ == "__main__":
    sys.exit(main())
