"""The `tf2ir` command line: convert, compile, check, plugins and more.

Only the standard library's lightest modules are imported before `main` has installed the
signal handlers (tools/signals.py): a SIGINT, SIGTERM or SIGHUP while the heavy modules load
ends the run with one line, as at any later moment."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, List, Optional

from tf2ir.tools import signals

if TYPE_CHECKING:
    import argparse


def _log():
    import logging
    return logging.getLogger("tf2ir")


def _parser_class():
    import argparse
    from tf2ir.ir.errors import escape

    class Parser(argparse.ArgumentParser):
        """Usage errors in one line, with the hint to run --help (exit 2)."""

        def error(self, message: str):
            self.exit(2, f"tf2ir: error: {escape(message)}; for usage see '{self.prog} --help'\n")

        def format_help(self) -> str:
            if callable(self.epilog):   # made when shown: listing the passes loads their modules
                self.epilog = self.epilog()
            return super().format_help()
    return Parser


def build_parser() -> argparse.ArgumentParser:
    import argparse
    from tf2ir.tools.options import (
        EPILOG, MODEL_HELP, add_common, add_export_options, add_fallback_option,
        add_fusion_option, add_model_source, add_pass_options, add_shape_options, passes_epilog,
    )
    parser = _parser_class()(
        prog="tf2ir", description="Convert TensorFlow models to an IR and compile it to ONNX.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from tf2ir import __version__
    parser.add_argument("--version", action="version", version=f"tf2ir {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    convert = sub.add_parser(
        "convert", help="convert a TF model (frozen .pb/.pbtxt, SavedModel directory, Keras "
                        ".keras/.h5) or a TFLite .tflite model to ONNX or to IR",
        description="Convert a TensorFlow model (a frozen GraphDef, .pb binary or .pbtxt text; "
                    "a SavedModel directory; a Keras .keras/.h5 file) or a TFLite .tflite "
                    "model into an ONNX model "
                    "(default) or into tf2ir's text IR with a weights file.",
        epilog=lambda: passes_epilog() + EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    convert.add_argument("model", help=MODEL_HELP)
    convert.add_argument("-o", "--output", required=True, help="output file (.onnx or .ir)")
    convert.add_argument("--emit", choices=("onnx", "ir"), default=None,
                         help="what to write (default: from the output's extension, else onnx)")
    add_shape_options(convert)
    add_fusion_option(convert)
    add_fallback_option(convert)
    add_pass_options(convert)
    add_export_options(convert)
    convert.add_argument("--verify", action="store_true",
                         help="run TensorFlow (the LiteRT interpreter for a .tflite) and "
                              "onnxruntime on random inputs (or "
                              "--inputs-data) and compare (exit 4 on a mismatch; the output "
                              "file is kept)")
    from tf2ir.tools.verify import add_options as add_verify_options
    add_verify_options(convert)   # --inputs-data, --rtol, --atol, --seed, --batch, as verify
    from tf2ir.tools import report
    report.add_report_option(convert)
    add_common(convert)
    add_model_source(convert)

    compile_ = sub.add_parser(
        "compile", help="compile a saved IR (.ir + .ir.weights) to ONNX",
        description="Verify a saved tf2ir IR file against the op prototypes and compile it to ONNX.",
        epilog=lambda: passes_epilog() + EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    compile_.add_argument("ir", help="IR text file written by `tf2ir convert --emit ir`")
    compile_.add_argument("-o", "--output", required=True, help="output .onnx file")
    add_pass_options(compile_)
    add_export_options(compile_)
    add_common(compile_)

    plugins = sub.add_parser("plugins", help="list the registered op mapping plugins",
                             description="List every origin op type (TF, and TFLite's as "
                                         "framework TFLITE) with the IR op type and "
                                         "plugin that maps it, and each plugin's native kernel "
                                         "libraries (domain, ops, file or why not built).")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    add_common(plugins)

    from tf2ir.tools import verify
    verify.add_parser(sub)
    from tf2ir.tools import runtime
    runtime.add_parser(sub)

    new_plugin = sub.add_parser(
        "new-plugin", help="write an installable plugin package for a TF op type",
        description="Write NAME/ (setup.cfg with the tf2ir entry point, a plugin module and a "
                    "test) mapping TF op type --origin-op to an IR op, with the op's inputs, "
                    "outputs and attributes from TensorFlow's op registry where TensorFlow is "
                    "installed. Then: pip install NAME/")
    new_plugin.add_argument("name", help="package name, e.g. my_ops")
    new_plugin.add_argument("--origin-op", required=True, metavar="TYPE", help="TF op type to map")
    new_plugin.add_argument("--ir-op", metavar="TYPE",
                            help="map to this existing IR op (default: declare a new IR op named TYPE)")
    new_plugin.add_argument("--native", action="store_true",
                            help="add a C++ kernel (NAME/PKG/kernels.cc, onnxruntime's lite custom-op "
                                 "API) built at pip install; the Python kernel stays the fallback")
    new_plugin.add_argument("--framework", default="tensorflow", type=str.lower, choices=["tensorflow", "tflite"], help="the framework of --origin-op: a TF op type, or a TFLite builtin (CONV_2D) or custom op (default: %(default)s)")
    new_plugin.add_argument("-o", "--out-dir", default=".", help="where to create NAME/")
    new_plugin.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    from tf2ir.tools import batch
    batch.add_parser(sub)
    from tf2ir.tools import check
    check.add_parser(sub)
    report.add_parser(sub)
    from tf2ir.tools import optimize
    optimize.add_parser(sub)
    return parser


def _timed(phases, name):
    import time

    class _Timer:
        def __enter__(self):
            self.start = time.perf_counter()

        def __exit__(self, *exc):
            phases[name] = time.perf_counter() - self.start
            _log().info("%-8s %.3f s", name, phases[name])
    return _Timer()


def cmd_convert(args) -> int:
    from tf2ir.ir.text import weights_path
    from tf2ir.tools.options import (
        pipeline_from_args, plugin_manager, refuse_outputs, refuse_verify_options_without_verify,
    )
    refuse_verify_options_without_verify(args)
    emit = args.emit or ("ir" if args.output.endswith(".ir") else "onnx")
    # Never overwrite an input, a device or a directory (before any work).
    refuse_outputs([args.output, weights_path(args.output)] if emit == "ir" else [args.output],
                   args)
    if args.report:
        refuse_outputs([args.report], args)
        if os.path.realpath(args.report) == os.path.realpath(args.output):
            from tf2ir.ir.errors import ConversionError, ExitStatus
            raise ConversionError("--report must not be the output file",
                                  exit_code=ExitStatus.USAGE)
    from tf2ir.tools.progress import PhaseLine, wanted
    phases = {}
    with _timed(phases, "plugins"):
        manager = plugin_manager(args)
    pipeline = pipeline_from_args(args, manager)   # bad options fail before any work
    with PhaseLine(wanted(args.quiet or args.verbose)) as progress:   # -v logs phases itself
        return _convert(args, emit, pipeline, progress)


def _convert(args, emit, pipeline, progress) -> int:
    from tf2ir.ir.errors import ExitStatus
    from tf2ir.ir.text import save
    from tf2ir.tools.api_core import Source, convert_pipeline
    log = _log()

    phases = {}
    from tf2ir.tools.report import start_for_convert
    builder = start_for_convert(args, pipeline)   # --report: None without it
    # the conversion tf2ir.convert runs (tools/api_core.py), compiled in memory for ONNX
    result = convert_pipeline(pipeline, Source(args.model, path=args.model),
                              compile=emit == "onnx", builder=builder, progress=progress)
    graph, report = result.ir, result.report.details
    if builder and builder.error:   # unsupported op types: the report shows them
        builder.write_and_raise(args.report)
    if emit == "ir":
        progress.phase(f"saving {report.ir_nodes} IR nodes")
    import time
    start = time.perf_counter()
    if emit == "ir":
        save(graph, args.output)
    else:
        result.save(args.output)
        model = result.skeleton
    name = "save" if emit == "ir" else "compile"   # compile: in memory, then written
    phases[name] = time.perf_counter() - start + report.phases.pop("compile", 0.0)
    log.info("%-8s %.3f s", name, phases[name])
    progress.close()
    if builder and emit == "onnx":
        builder.after_compile(model, phases["compile"])
    for override in pipeline.manager.overrides_for(report.op_types, report.framework):
        if not args.quiet:
            print(f"tf2ir: note: {override}", file=sys.stderr)   # never silent, unless asked
    for name, seconds in report.phases.items():
        log.info("%-8s %.3f s", name, seconds)
    for name, count in report.fusions.items():
        log.info("fused    %s: %d match%s", name, count, "es" if count > 1 else "")
    log.info("%d %s nodes, %d kept, %d IR nodes -> %s", report.tf_nodes, report.node_kind,
             report.kept_nodes, report.ir_nodes, args.output)
    status = ExitStatus.OK
    if getattr(args, "verify", False):
        from tf2ir.tools.verify import verify_after_convert
        status = verify_after_convert(args, report, graph, emit, progress)
    if builder:
        # --emit ir: the report shows the ONNX graph the saved IR compiles to (compiled last:
        # compiling rewrites the graph)
        compiled = builder.compile() if emit == "ir" else None
        if getattr(args, "verify", False):   # each node's error against TF, for the report
            import onnx
            builder.verify(onnx.load(args.output) if compiled is None else compiled)
        builder.write(args.report)
    return status


def cmd_compile(args) -> int:
    from tf2ir.ir.errors import ExitStatus
    from tf2ir.ir.infer import infer_graph
    from tf2ir.ir.text import load
    from tf2ir.tools.options import pipeline_from_args, refuse_outputs

    refuse_outputs([args.output], args)   # the IR and its weights file are inputs
    phases = {}
    pipeline = pipeline_from_args(args)   # its plugins declare the IR's op prototypes
    with _timed(phases, "load"):
        graph = load(args.ir)
        graph.use_prototypes(pipeline.prototypes)   # the IR's ops are its plugins'
    with _timed(phases, "verify"):
        infer_graph(graph, model=args.ir)
    with _timed(phases, "compile"):
        pipeline.compile(graph, args.output, model=args.ir)
    return ExitStatus.OK


def cmd_plugins(args) -> int:
    import json
    from collections import Counter
    from tf2ir.ir.errors import ExitStatus
    from tf2ir.tools.options import plugin_manager
    from tf2ir.plugins.registry import split_mapping_key
    manager = plugin_manager(args)
    rows = []
    # keys: TF's op type alone, TFLite's "TFLITE:CONV_2D"; listed by framework, then op type
    for key in sorted(manager.registry, key=lambda k: (split_mapping_key(k)[0] != "TENSORFLOW",
                                                       split_mapping_key(k))):
        reg = manager.registry[key]
        framework, origin = split_mapping_key(key)
        overrides = [str(o) for o in manager.overrides if o.origin_type == key]
        rows.append({"kind": "op_mapping", "framework": framework, "origin_op_type": origin,
                     "ir_op_type": reg.ir_type, "plugin": reg.plugin, "source": reg.source,
                     "imply_type": reg.imply, "priority": reg.priority, "overrides": overrides})
    from tf2ir.tools.runtime import native_rows
    libraries = native_rows(manager)
    if args.json:
        print(json.dumps(rows + libraries, indent=2))
        return ExitStatus.OK
    width = max((len(r["origin_op_type"]) for r in rows), default=10)
    ir_width = max((len(r["ir_op_type"]) for r in rows), default=10)
    print(f"{'ORIGIN OP TYPE':<{width}}  {'FRAMEWORK':<10}  {'IR OP TYPE':<{ir_width}}  "
          f"{'IMPLY':<7}  PLUGIN")
    for r in rows:
        note = f"  (overrides: {'; '.join(r['overrides'])})" if r["overrides"] else ""
        print(f"{r['origin_op_type']:<{width}}  {r['framework']:<10}  "
              f"{r['ir_op_type']:<{ir_width}}  {r['imply_type']:<7}  {r['plugin']}{note}")
    counts = Counter(r["framework"] for r in rows)
    print(f"{len(rows)} origin op types ("
          + ", ".join(f"{framework} {n}" for framework, n in counts.items()) + ")")
    foreign = sorted(p for p, proto in manager.prototypes.items()
                     if not proto.plugin.startswith("builtin_"))
    print(f"{len(manager.prototypes)} IR op prototypes"
          + (f" ({', '.join(foreign)} from plugins)" if foreign else ""))
    print("".join(f"override: {override}\n" for override in manager.prototype_overrides), end="")
    for p in manager.fusion_passes:   # in run order
        print(f"fusion pass {p.name:<12} {'on ' if p.enabled else 'off'}  {p.plugin}  {p.description}")
    for library in libraries:
        where = library["file"] or f"not built: {library['not_built']}"
        print(f"native library {library['plugin']}  {library['domain']}: "
              f"{', '.join(library['ops'])}  ({where})")
    return ExitStatus.OK


def cmd_new_plugin(args) -> int:
    from tf2ir.ir.errors import ExitStatus
    from tf2ir.tools.scaffold import package_name, write_plugin_package
    root = write_plugin_package(args.name, args.origin_op, args.out_dir, args.ir_op, args.native, args.framework)
    if args.native:
        print(f"wrote {root}: write the compute in {os.path.join(root, package_name(args.name), 'kernels.cc')}, "
              f"then pip install -e {root} && python -m pytest {os.path.join(root, 'tests')}")
    else:
        print(f"wrote {root}: pip install {root} && tf2ir plugins | grep {args.origin_op}")
    return ExitStatus.OK


def cmd_verify(args) -> int:
    from tf2ir.tools.api_verify import run
    return run(args)


def cmd_check(args) -> int:
    from tf2ir.tools.check import run
    return run(args)


def cmd_report(args) -> int:
    from tf2ir.tools.report import run
    return run(args)


def cmd_batch(args) -> int:
    from tf2ir.tools.batch import run
    return run(args)


def cmd_run(args) -> int:
    from tf2ir.tools.runtime import run
    return run(args)


def cmd_optimize(args) -> int:
    from tf2ir.tools.optimize import run
    return run(args)


COMMANDS = {"convert": cmd_convert, "compile": cmd_compile, "plugins": cmd_plugins,
            "new-plugin": cmd_new_plugin, "batch": cmd_batch, "verify": cmd_verify,
            "check": cmd_check, "run": cmd_run, "report": cmd_report,
            "optimize": cmd_optimize}


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line. SIGINT, SIGTERM and SIGHUP end it with one line and exit status
    130, 143 or 129 from the first moment on (the temporaries being written are removed).
    Called from Python with `argv`, it restores the signal handlers it found."""
    previous = signals.install()
    try:
        try:
            status = _main(argv)
        except KeyboardInterrupt:   # Python's own SIGINT handler (no handlers installed here)
            import signal
            raise signals.Interrupted(signal.SIGINT) from None
        late = signals.received()   # raised where it could not propagate (a __del__)
        return signals.report(late) if late is not None else status
    except signals.Interrupted as exc:
        return signals.report(exc)
    finally:
        if argv is not None:
            signals.restore(previous)
        else:
            # The process ends now: what the conversion built (millions of objects in cycles,
            # for a big model) is freed with it, not collected one by one at shutdown
            import gc
            gc.freeze()


def _main(argv: Optional[List[str]]) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:   # the shell asks for completions (docs/command-line.md)
        import argcomplete
        argcomplete.autocomplete(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # --help (0) or a usage error, printed in one line (2)
        return exc.code if isinstance(exc.code, int) else 2
    quiet = getattr(args, "quiet", False)
    if quiet:
        import warnings
        warnings.simplefilter("ignore")
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import logging
    logging.basicConfig(level=logging.ERROR if quiet else
                        logging.INFO if args.verbose else logging.WARNING,
                        format="tf2ir: %(message)s", stream=sys.stderr)
    from tf2ir.ir.errors import ConversionError, ExitStatus, escape
    try:
        status = COMMANDS[args.command](args)
        sys.stdout.flush()   # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:   # `tf2ir plugins | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitStatus.OK
    except ConversionError as exc:
        _traceback(args)
        print(f"tf2ir: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        _traceback(args)
        where = f" {escape(exc.filename)}" if exc.filename else ""
        print(f"tf2ir: error: cannot access{where}: {escape(exc.strerror or exc)}", file=sys.stderr)
        return ExitStatus.FAILED
    except Exception as exc:  # a bug in tf2ir: still one line, the traceback with -v
        _traceback(args)
        plugin = _plugin_of(exc)   # (plugin code outside the places that name the plugin)
        what = f"plugin {escape(plugin)} failed" if plugin else "internal error"
        print(f"tf2ir: error: {what} while handling {_subject(args)}: "
              f"{type(exc).__name__}: {escape(exc)} (run with -v for the traceback)",
              file=sys.stderr)
        return ExitStatus.FAILED
    except (SystemExit, KeyboardInterrupt) as exc:
        # tf2ir's commands never raise these (its signal handlers raise Interrupted): code it
        # ran, such as a plugin's function outside the places that name the plugin, did.
        _traceback(args)
        how = (f"called sys.exit({exc.code!r})" if isinstance(exc, SystemExit)
               else "raised KeyboardInterrupt")
        plugin = _plugin_of(exc)
        who = f"plugin {escape(plugin)}" if plugin else "code tf2ir ran (a plugin?)"
        print(f"tf2ir: error: while handling {_subject(args)}, {who} {escape(how)}; "
              "run with -v for the traceback", file=sys.stderr)
        return ExitStatus.FAILED
    finally:
        signals.clean_up()   # the writers remove their temporaries; this catches any left


def _subject(args) -> str:
    """What the command was working on, for an error line."""
    from tf2ir.ir.errors import escape
    for key in ("model", "ir", "input", "name"):
        if getattr(args, key, None):
            return escape(getattr(args, key))
    return args.command


def _plugin_of(exc: BaseException):
    """The plugin file whose code raised `exc` (the innermost plugin frame of its traceback:
    the plugin manager imports a plugin file as module `tf2ir_plugin_*`), or None."""
    found, tb = None, exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("tf2ir_plugin_"):
            found = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return found


def _traceback(args) -> None:
    if getattr(args, "verbose", False):
        import traceback
        traceback.print_exc()


if __name__ == "__main__":
    sys.exit(main())
