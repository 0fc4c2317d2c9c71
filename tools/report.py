"""`tf2ir report`: one self-contained HTML page that shows what became what in a conversion.

`collect_report` runs the normal pipeline (parser/pipeline.py) with its trace on and gathers
three graphs, each grouped by name scope: the TF graph (scope fusions shown as outlined groups
of the nodes they replaced, fallback segments outlined, unsupported nodes red), the IR graph
(per node: origin op type, plugin and priority, attributes with their provenance, formats,
shapes and dtypes) and the ONNX graph, linked both ways; If/While bodies are nested graphs.
It adds the phases, the passes with what each removed and, with `verify`, the per-node error
against TensorFlow. `render_html` inlines the data, the page's script and the vendored
layout library (report_assets/: dagre from the npm registry), so the page needs no network.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import time
import urllib.parse
from dataclasses import replace
from typing import Any, Dict, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools.options import (
    EPILOG, MODEL_HELP, add_common, add_fallback_option, add_fusion_option, add_model_source,
    add_pass_options, add_shape_options, pipeline_from_args,
)

ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_assets")


# -- the command ---------------------------------------------------------------------------
def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "report", help="write an HTML report of a conversion: TF, IR and ONNX graphs linked",
        description="Convert MODEL (frozen .pb/.pbtxt, SavedModel directory, Keras .keras/.h5)\n"
                    "as `convert` does, without writing the model, and write one self-contained\n"
                    "HTML page (no network needed): the TF graph grouped by name scope beside the\n"
                    "IR and ONNX graphs, linked both ways, with each node's plugin, attributes,\n"
                    "formats, shapes and dtypes, the unsupported op types in red, the phases and\n"
                    "the passes. The page is written also when the model has unsupported or\n"
                    "failing op types (exit 3 or 1) or, with --verify, differs from TensorFlow\n"
                    "(exit 4); an error before the mapping (an unreadable model) writes nothing.",
        epilog=_passes_epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=MODEL_HELP)
    parser.add_argument("-o", "--output", required=True, metavar="REPORT.html",
                        help="the HTML file to write")
    parser.add_argument("--verify", action="store_true",
                        help="run TensorFlow and onnxruntime on random inputs (or --inputs-data) "
                             "and show every node's error against TensorFlow (exit 4 on a "
                             "mismatch)")
    from tf2ir.tools.verify import add_options
    add_options(parser)   # --inputs-data, --rtol, --atol, --seed, --batch, as `verify`
    add_shape_options(parser)
    add_fusion_option(parser)
    add_fallback_option(parser)
    add_pass_options(parser)
    add_common(parser)
    add_model_source(parser)
    return parser


def _passes_epilog() -> str:
    from tf2ir.tools.options import passes_epilog
    return passes_epilog() + EPILOG


def run(args) -> int:
    from tf2ir.tools.options import refuse_outputs, refuse_verify_options_without_verify
    refuse_outputs([args.output], args)
    from tf2ir.tools.verify import options_from_args
    refuse_verify_options_without_verify(args)
    pipeline = pipeline_from_args(args)   # bad options fail before any work
    builder = ReportBuilder(pipeline, args.model, source=_source(args))
    return builder.run_and_write(args.output, verify=args.verify,
                                 options=options_from_args(args))


def add_report_option(parser: argparse.ArgumentParser) -> None:
    """`convert --report REPORT.html`."""
    parser.add_argument("--report", default=None, metavar="REPORT.html",
                        help="also write an HTML report of the conversion (as `tf2ir report`; "
                             "written also when op types are unsupported, exit 3)")


def start_for_convert(args, pipeline) -> Optional["ReportBuilder"]:
    """`convert --report`: a builder whose trace the conversion fills; None without it."""
    if not getattr(args, "report", None):
        return None
    return ReportBuilder(pipeline, args.model, source=_source(args))


def _source(args) -> dict:
    from tf2ir.tools.options import model_tags
    return {"signature": getattr(args, "signature", None), "tags": model_tags(args)}


# -- collecting ----------------------------------------------------------------------------
class ReportBuilder:
    """Runs one conversion with the pipeline's trace on and turns what it saw into the
    report's data. `tf2ir report` calls `run_and_write`; `convert --report` and `batch
    --report-html` call its steps (`convert`, `pass_manager` for their compile,
    `after_compile`, `verify`, `write`), so every report shows the conversion that ran."""

    def __init__(self, pipeline, model: str, source: Optional[dict] = None):
        self.pipeline = pipeline
        self.model = model
        self.source = source or {}
        self.trace: Dict[str, Any] = {}
        pipeline.trace = self.trace
        self.pass_stats: Dict[str, Dict[str, Any]] = {}
        self.graph: Any = None                    # the IR graph (the IR passes rewrite it)
        self.report: Any = None                   # the pipeline's ConversionReport
        self.views: Any = None                    # report_views.GraphViews
        self.onnx_model: Any = None
        self.verification: Optional[Dict[str, Any]] = None
        self.ir_nodes = 0
        self.status = "ok"
        self.error: Optional[ConversionError] = None

    # the steps, for `convert --report`
    def convert(self):
        """pipeline.convert_file with the trace on; an error after the mapping walk (the
        unsupported op types, failing plugins) is kept: the report shows the nodes."""
        try:
            self.graph, self.report = self.pipeline.convert_file(self.model)
        except ConversionError as exc:
            converter = self.trace.get("converter")
            if converter is None or converter.graph is None or not (
                    converter.unsupported or converter.failures):
                raise
            self.error, self.graph, self.report = exc, converter.graph, converter.report
            self.status = "unsupported" if exc.exit_code == ExitStatus.UNSUPPORTED else "failed"
        self.capture_graphs()
        return self.graph, self.report

    def capture_graphs(self) -> None:
        """The TF and IR views, taken before the IR passes rewrite the graph."""
        from tf2ir.tools.report_views import GraphViews
        self.ir_nodes = len(self.graph.nodes)
        self.views = GraphViews(self.pipeline.manager, self.trace, self.report.attr_origins)
        self.views.main(self.trace["front"], self.trace["converter"], self.graph)

    def pass_manager(self):
        """The compile's pass manager, each pass wrapped to count the nodes it removes."""
        from tf2ir.ir.onnx.compile import ALL_PASSES, check_after_pass
        from tf2ir.ir.passes import PassManager
        options = self.pipeline.options
        stats = self.pass_stats

        def counted(record):
            def run(graph):
                before = len(graph.nodes)
                start = time.perf_counter()
                rewrites = record.run(graph) or 0
                row = stats.setdefault(record.name, {"kind": record.kind, "rewrites": 0,
                                                     "removed": 0, "seconds": 0.0})
                row["rewrites"] += rewrites
                row["removed"] += before - len(graph.nodes)
                row["seconds"] += time.perf_counter() - start
                return rewrites
            return replace(record, run=run)
        return PassManager([counted(r) for r in ALL_PASSES], options.passes, "--passes",
                           check_after_pass if options.check_passes else None)

    def after_compile(self, onnx_model, seconds: float) -> None:
        self.report.phases["compile"] = seconds
        self.onnx_model = onnx_model
        self.views.onnx_view(onnx_model.graph, "ONNX graph", None)

    def verify(self, onnx_model, options=None) -> int:
        """Per-node errors against TensorFlow (tools/verify.py's machinery); 0 or 4."""
        start = time.perf_counter()
        status, errors = node_errors(self.model, onnx_model, self.report, self.graph,
                                     options, self.source)
        self.report.phases["verify"] = time.perf_counter() - start
        self.verification = errors
        return status

    def compile(self):
        """Compile the IR graph in memory (nothing written); return the ONNX model with
        its weights."""
        from tf2ir.ir.onnx.compile import build_model
        from tf2ir.ir.onnx.writer import tensor_proto
        start = time.perf_counter()
        model, initializers = build_model(self.graph, self.model, manager=self.pass_manager())
        self.after_compile(model, time.perf_counter() - start)
        full = type(model)()
        full.CopyFrom(model)
        full.graph.initializer.extend(tensor_proto(n, a) for n, a in initializers)
        return full

    def run_and_write(self, path: str, verify: bool = False, options=None) -> int:
        """`tf2ir report`: convert, compile in memory, optionally verify (tools/verify.py's
        VerifyOptions `options`: inputs, tolerances), write the page."""
        self.convert()
        if self.error is not None:
            self.write_and_raise(path)
        model = self.compile()
        status = self.verify(model, options) if verify else ExitStatus.OK
        self.write(path)
        return status

    def write(self, path: str) -> None:
        write_html(render_html(self.finish()), path)

    def write_and_raise(self, path: str) -> None:
        """The conversion stopped at unsupported or failing op types: write the page, then
        raise its error, which says where the page is."""
        assert self.error is not None
        self.write(path)
        self.error.message += f" (report written to {path})"
        raise self.error

    # -- the data ------------------------------------------------------------------------
    def finish(self) -> Dict[str, Any]:
        from tf2ir import __version__
        report, front = self.report, self.trace["front"]
        converter = self.trace["converter"]
        onnx_model = self.onnx_model
        manager = self.pipeline.manager
        summary = {
            "model": self.model, "version": __version__,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "status": self.status, "error": str(self.error) if self.error else "",
            "tf_nodes": report.tf_nodes, "kept": report.kept_nodes,
            "ir_nodes": self.ir_nodes,
            "onnx_nodes": len(onnx_model.graph.node) if onnx_model is not None else None,
            "phases": {k: round(v, 4) for k, v in report.phases.items()},
            "fusions": [{"name": name, "matches": count,
                         "removed": self._fused_removed(front, name)}
                        for name, count in report.fusions.items()],
            "passes": [{"name": name, **{k: (round(v, 4) if isinstance(v, float) else v)
                                         for k, v in row.items()}}
                       for name, row in self.pass_stats.items()],
            "plugins": dict(sorted(report.plugins_used.items(), key=lambda kv: -kv[1])),
            "overrides": [str(o) for o in manager.overrides_for(report.op_types, report.framework)],
            "unsupported": [{"op": op, "count": p.count, "example": p.example,
                             "message": p.message,
                             "nodes": self.views.find("tf", op_type=op, cls="unsupported")}
                            for op, p in sorted(converter.unsupported.items())],
            "failures": [{"op": op, "count": p.count, "example": p.example,
                          "message": str(p.error) if p.error else p.message,
                          "nodes": self.views.find("tf", op_type=op, cls="failed")}
                         for op, p in sorted(converter.failures.items())],
            "segments": [{"name": s.name, "nodes": len(s.nodes), "op_types": s.op_types_counts()}
                         for s in front.segments],
        }
        if self.verification is not None:
            summary["verify"] = self.views.apply_errors(self.verification)
        return {"summary": summary, **self.views.as_json()}

    @staticmethod
    def _fused_removed(front, pass_name: str) -> int:
        from tf2ir.tools.report_views import inner_nodes
        fused = [n for n in front.tf_graph.nodes.values() if getattr(n, "pass_name", "") == pass_name]
        inner = {i.name for n in fused for i in inner_nodes(n)}
        made = {n.name for n in fused}
        return len(inner) - len(made)


# -- per-node verification -----------------------------------------------------------------
def node_errors(model_path: str, onnx_model, report, graph, options=None,
                source: Optional[dict] = None) -> Tuple[int, Dict[str, Any]]:
    """Run TF and onnxruntime on the same seeded inputs; every converted TF tensor that
    still exists in the ONNX model compared (tools/verify.py's candidates, in chunks of one
    debug run each). Returns (0 or 4, {"outputs": rows, "nodes": {name: error}, "first"})."""
    from tf2ir.tools.verify import (
        EXIT_MISMATCH, EXIT_OK, VerifyOptions, _run_onnx, _run_tf, _tf_graph, _tf_tensor_name,
        compare, make_inputs, tensor_comparisons,
    )
    from tf2ir.tools.verify_core import node_error_table, note_node_error
    options = options or VerifyOptions()
    from tf2ir.tools.verify_tflite import node_errors as tflite_node_errors
    tflite = tflite_node_errors(model_path, onnx_model, report, graph, options, source)
    if tflite is not None:   # a .tflite: against the LiteRT interpreter
        return tflite
    tf_graph = _tf_graph(model_path, **(source or {}))
    feeds = make_inputs(onnx_model, options, tf_graph)   # integers the graph can take
    names = [o.name for o in onnx_model.graph.output]
    expected = _run_tf(tf_graph, feeds, [_tf_tensor_name(n) for n in names])
    from tf2ir.ir.prototype import prototypes_of
    actual = _run_onnx(onnx_model, feeds, names, prototypes_of(graph))   # its plugins' kernels
    rows = [compare(n, a, e, options.rtol, options.atol) for n, a, e in zip(names, actual, expected)]
    result: Dict[str, Any] = node_error_table(rows, options)
    try:
        for node, _, row in tensor_comparisons(onnx_model, tf_graph, feeds, report, options,
                                               graph):
            note_node_error(result, node, row)
    except Exception as exc:   # best effort, as in verify: the outputs are compared
        result["note"] = f"per-node errors incomplete: {type(exc).__name__}: {exc}"
    ok = all(r.ok for r in rows)
    return (EXIT_OK if ok else EXIT_MISMATCH), result


# -- the page --------------------------------------------------------------------------------
# Every string from a model or a file name reaches the page escaped for its context
# (DESIGN decision 12): element text and attribute values by `html_text`, URLs by `href`,
# the data by `script_json` (no '<', '>', '&', U+2028, U+2029 left raw in the script
# element); the page's script puts strings into the DOM through its `esc` only. The page's
# Content-Security-Policy runs only its own scripts (by hash): no inline handler, no
# javascript: URL and no other script element runs, whatever a string holds.
PLACEHOLDER = re.compile(r"/\*%([A-Z_]+)%\*/")
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)
INDEX_PAGE = "index.html"


def _asset(name: str) -> str:
    with open(os.path.join(ASSETS, name), encoding="utf-8") as f:
        return f.read()


def html_text(value: Any) -> str:
    """`value` as element text or a quoted attribute value (quotes escaped); NUL, which a
    page cannot hold, becomes U+FFFD."""
    return html.escape(str(value), quote=True).replace("\0", "\ufffd")


def href(path: str) -> str:
    """A relative link to the file `path` (a name in the same directory), for a quoted
    href: percent-encoded ('/' and ':' too), so it can never name a scheme (javascript:)
    or another host."""
    return html_text(urllib.parse.quote(path, safe=""))


def script_json(data: Any) -> str:
    """`data` as JSON safe inside a <script> element: nothing can close the element or
    open a comment, and the line separators a JavaScript parser might trip on are escaped."""
    text = json.dumps(data, separators=(",", ":"), default=str)   # ASCII: U+2028 as \u2028
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def _script_text(text: str) -> str:
    """A script's source as the HTML parser will see it (so that its hash matches)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("</script", "<\\/script")


def _csp_hash(script: str) -> str:
    import base64
    import hashlib
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_html(data: Dict[str, Any]) -> str:
    """The page: template, style, layout library, script and data, all inline. The template's
    placeholders are filled in one pass, so no inserted text is ever scanned again."""
    library = "\n".join(line for line in _asset("dagre.min.js").splitlines()
                        if not line.startswith("//# sourceMappingURL"))
    template = _asset("report.html")
    values = {"STYLE": _asset("report.css").replace("</", "<\\/"),
              "LIBRARY": _script_text(library), "SCRIPT": _script_text(_asset("report.js")),
              "DATA": script_json(data)}
    own = [s for s in _SCRIPT.findall(template) if not PLACEHOLDER.search(s)]
    values["SCRIPT_HASHES"] = " ".join(_csp_hash(s) for s in
                                       own + [values["LIBRARY"], values["SCRIPT"]])
    title = os.path.basename(str(data["summary"]["model"]).rstrip("/")) or "model"
    values["TITLE"] = html_text(title)
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def write_html(text: str, path: str) -> None:
    """Write atomically: a unique temporary file beside `path`, renamed over it."""
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


# -- batch -----------------------------------------------------------------------------------
def convert_with_report(pipeline, model: str, output: str, page: str):
    """Convert `model` to `output` (as `convert`) and write its report to `page`; the page
    is written also when the conversion stops at unsupported or failing op types (raised
    then). Returns the ONNX ModelProto."""
    builder = ReportBuilder(pipeline, model)
    graph, _ = builder.convert()
    if builder.error is not None:
        builder.write_and_raise(page)
    start = time.perf_counter()
    onnx_model = pipeline.compile(graph, output, model=model, manager=builder.pass_manager())
    builder.after_compile(onnx_model, time.perf_counter() - start)
    builder.write(page)
    return onnx_model


def page_name(model_name: str) -> str:
    """The report page of a batch model: its name as listed, '/' → '__', plus .html."""
    return model_name.replace(os.sep, "__").replace("/", "__") + ".html"


INDEX_STYLE = ("body{font:13px system-ui,sans-serif;margin:12px}table{border-collapse:collapse}"
               "td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}"
               ".failed td,.unsupported td,.mismatch td{color:#b00}")
# The index runs no script at all: a string that slipped through could not run one either.
INDEX_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def write_index(directory: str, results: Sequence[Dict[str, Any]], jobs, seconds: float) -> None:
    """DIR/index.html: the batch table, each model linking its report page. Every name and
    message is escaped for its context (html_text, href)."""
    pages = {job.name: os.path.basename(job.report_html) for job in jobs if job.report_html}
    rows = []
    for r in results:
        page = pages.get(r["name"])
        exists = page and os.path.exists(os.path.join(directory, page))
        name = (f'<a href="{href(page)}">{html_text(r["name"])}</a>' if exists
                else html_text(r["name"]))
        status = html_text(r["status"])
        rows.append(f'<tr class="{status}"><td>{name}</td><td>{status}</td>'
                    f'<td>{float(r["seconds"]):.2f}</td><td>{html_text(r["message"])}</td></tr>')
    counts: Dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    text = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{INDEX_CSP}">'
            f"<title>tf2ir batch</title><style>{INDEX_STYLE}</style></head><body>"
            f"<h1>tf2ir batch: {len(results)} models in {seconds:.1f} s</h1><p>"
            + html_text(", ".join(f"{n} {s}" for s, n in sorted(counts.items()))) +
            "</p><table><tr><th>model</th><th>status</th><th>s</th><th>message</th></tr>"
            + "".join(rows) + "</table></body></html>\n")
    write_html(text, os.path.join(directory, INDEX_PAGE))
