"""`tf2ir batch`: convert many frozen models in parallel, skipping unchanged ones, with a
summary table, a JSON report and a JUnit file. The model list is tools/batch_jobs.py, the
conversions (one model; the worker pool) tools/batch_convert.py."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from typing import Dict, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools.options import (
    add_common, add_export_options, add_fusion_option, add_shape_options,
)
# The model list and the conversions, importable from here as before the split; run() calls
# them through this module's names (the fuzz harness's manifest mode and its tests replace them).
from tf2ir.tools.batch_convert import (  # noqa: F401
    DEFAULT_TIMEOUT, Result, _fingerprint, _one_line, _plugin_manager,
    _read_sidecar, _verify, _warm_up, _write_sidecar, convert_all, convert_one, hash_file)
from tf2ir.tools.batch_jobs import (  # noqa: F401
    MODEL_SUFFIXES, SIDECAR_SUFFIX, Job, _default_output, _split_list, jobs_from_directory,
    jobs_from_manifest, parse_shard, refuse_escapes, shard_jobs)

EXIT_OK, EXIT_FAILED = ExitStatus.OK, ExitStatus.FAILED
EXIT_USAGE, EXIT_UNSUPPORTED = ExitStatus.USAGE, ExitStatus.UNSUPPORTED
EXIT_MISMATCH = ExitStatus.MISMATCH
STATUSES = ("ok", "skipped", "failed", "unsupported", "mismatch")
FAILURES = ("failed", "unsupported", "mismatch")

EPILOG = """INPUT is a directory (every .pb/.pbtxt/.tflite in it, sorted by name) or a
manifest file (.json; .yaml/.yml when PyYAML is installed): a list of models, or {"models": [...]}, each
a path string or {"path": "a.pb", "inputs": ["input:1,224,224,3"], "outputs": ["logits:0"],
"fusion": ["off:gelu"], "output": "a.onnx"}; paths are relative to the manifest. --inputs,
--outputs and --fusion are the defaults for models that do not set their own.

A manifest may come from someone else: it decides what is read, never where anything is
written. Each "output" is relative to -o and must stay inside it once resolved ('..',
absolute paths and symlinks that lead out are refused, as are an output's or sidecar's
symlink out of -o), checked before anything is written (exit 2, one line naming the
entry). Model paths may point anywhere the user running batch can read (relative to the
manifest, or absolute), as on a command line; they are only read, and only regular files.
A manifest is at most 16 MiB (YAML: 2 MiB), its fields are type-checked (strings, lists of
strings, no NUL), and YAML aliases (*name, <<: *name) and nesting over 32 levels are refused,
so a small file cannot expand.

A model whose output exists is skipped when its sidecar OUT.onnx.tf2ir.json records the same
input bytes (sha256), options and tf2ir version; --force converts it anyway.

A model that takes longer than --timeout seconds fails (its worker is stopped) and the others
go on. An output or sidecar that is one of the models or the manifest, or exists and is not
a regular file, is refused before any work (exit 2). On SIGINT, SIGTERM or SIGHUP the workers
are stopped and their temporary files removed (exit 130, 143, 129); workers never outlive
this process.

exit status:
  0  every model converted or was skipped as unchanged
  1  some model failed (bad file, plugin failure, invalid IR, crashed worker)
  2  usage error (bad option, bad manifest)
  3  every failure is a model with op types no plugin maps
  4  every failure is a mismatch with TensorFlow (--verify)
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "batch", help="convert many models (a directory or a manifest) in parallel",
        description="Convert every model of a directory or a manifest to ONNX in parallel "
                    "worker processes; one model's failure never stops the others.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="directory of .pb/.pbtxt/.tflite files, or a manifest "
                                      "(.json, .yaml)")
    parser.add_argument("-o", "--out-dir", required=True, help="directory for the .onnx files")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="worker processes (default: the number of CPUs)")
    parser.add_argument("--shard", default=None, metavar="I/N",
                        help="convert only slice I of N of the sorted model list; I is 1-based "
                             "(1/4 .. 4/4), the slices are contiguous and together cover every model")
    parser.add_argument("--force", action="store_true", help="convert unchanged models too")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                        help="stop a model's conversion after S seconds: it fails, the others "
                             f"go on (default {DEFAULT_TIMEOUT:g}; 0: no limit)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no table; failures still go to stderr")
    parser.add_argument("--report", metavar="FILE.json", help="write a JSON report")
    parser.add_argument("--junit", metavar="FILE.xml",
                        help="write a JUnit XML file, one testcase per model")
    parser.add_argument("--report-html", metavar="DIR",
                        help="write an HTML report per model (as tf2ir report) and DIR/index.html "
                             "with the batch table linking them")
    parser.add_argument("--verify", action="store_true",
                        help="after converting (or skipping) a model, run TensorFlow and "
                             "onnxruntime on seeded random inputs and compare, as tf2ir "
                             "verify does (plugin ops run by their kernels); a mismatch fails "
                             "the model (status mismatch, exit 4); needs TensorFlow")
    add_shape_options(parser)     # defaults for every model, as for `tf2ir convert`
    add_fusion_option(parser)
    add_export_options(parser)
    add_common(parser)
    return parser


# -- what the user sees ------------------------------------------------------------------
def format_table(results: Sequence[Result]) -> str:
    rows = [("MODEL", "STATUS", "SECONDS", "MESSAGE")]
    rows += [(r.name, r.status, f"{r.seconds:.2f}", r.message) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}  {d}".rstrip()
             for a, b, c, d in rows]
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    if not counts["mismatch"]:   # only --verify finds mismatches
        del counts["mismatch"]
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(results)} models")
    return "\n".join(lines)


def write_report(path: str, results: Sequence[Result], args, seconds: float) -> None:
    import tf2ir
    record = {"tf2ir_version": tf2ir.__version__, "input": args.input, "out_dir": args.out_dir,
              "shard": args.shard, "jobs": args.jobs, "seconds": round(seconds, 3),
              "summary": {s: sum(r.status == s for r in results) for s in STATUSES},
              "models": [asdict(r) for r in results]}
    _atomic_write(path, json.dumps(record, indent=2) + "\n")


def write_junit(path: str, results: Sequence[Result], seconds: float) -> None:
    import xml.etree.ElementTree as ET
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", {
        "name": "tf2ir batch", "tests": str(len(results)),
        "failures": str(sum(r.status in FAILURES for r in results)),
        "errors": "0", "skipped": str(sum(r.status == "skipped" for r in results)),
        "time": f"{seconds:.3f}"})
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": "tf2ir.batch", "name": r.name,
                                                 "time": f"{r.seconds:.3f}"})
        if r.status in FAILURES:
            failure = ET.SubElement(case, "failure", {"type": r.status, "message": r.message})
            failure.text = r.message
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", {"message": r.message})
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def _atomic_write(path: str, text: str) -> None:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)


def _refuse_outputs(jobs: Sequence[Job], args) -> None:
    """Before any work: no output, sidecar, report or JUnit file may be one of the models or
    the manifest, or exist and not be a regular file (exit 2). Missing directories are
    made later."""
    from tf2ir.ir.atomic import check_output_path
    inputs = [job.model for job in jobs] + ([args.input] if os.path.isfile(args.input) else [])
    by_key: Dict[object, str] = {}     # realpath and (device, inode) → input: linear, not N²
    for path in inputs:
        by_key.setdefault(os.path.realpath(path), path)
        identity = _identity(path)
        if identity is not None:
            by_key.setdefault(identity, path)
    outputs = [path for job in jobs for path in (job.output, job.output + SIDECAR_SUFFIX)]
    outputs += [job.report_html for job in jobs if job.report_html]
    for output in outputs + [p for p in (args.report, args.junit) if p]:
        if os.path.isdir(os.path.dirname(os.path.abspath(output))):
            same = [by_key[k] for k in (os.path.realpath(output), _identity(output)) if k in by_key]
            check_output_path(output, same)


def _identity(path: str) -> Optional[Tuple[int, int]]:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def batch_exit_status(results: Sequence[Result]) -> int:
    failed = [r for r in results if r.status in FAILURES]
    if not failed:
        return EXIT_OK
    for status, code in (("unsupported", EXIT_UNSUPPORTED), ("mismatch", EXIT_MISMATCH)):
        if all(r.status == status for r in failed):
            return code
    return EXIT_FAILED


def run(args) -> int:
    from tf2ir.tools.options import pipeline_from_args

    if args.jobs < 1:
        raise ConversionError(f"bad -j {args.jobs}; expected at least 1", exit_code=EXIT_USAGE)
    if not args.timeout >= 0:
        raise ConversionError(f"bad --timeout {args.timeout:g}; expected seconds (0: no limit)",
                              exit_code=EXIT_USAGE)
    # bad default options are a usage error, before any work
    export = pipeline_from_args(args).options.export
    defaults = {"inputs": list(args.inputs), "outputs": _split_list(args.outputs),
                "fusion": list(args.fusion)}
    manifest = None                 # the manifest's path, where the models come from one
    if os.path.isdir(args.input):
        jobs = jobs_from_directory(args.input, args.out_dir, defaults)
        if not jobs:
            raise ConversionError("no .pb or .pbtxt or .tflite models in this directory",
                                  model=args.input,
                                  exit_code=EXIT_USAGE)
    elif os.path.isfile(args.input):
        manifest = args.input
        jobs = jobs_from_manifest(args.input, args.out_dir, defaults)
    elif os.path.exists(args.input):
        raise ConversionError("is neither a directory nor a regular file (a manifest)",
                              model=args.input, exit_code=EXIT_USAGE)
    else:
        raise ConversionError("the input does not exist (expected a directory or a manifest)",
                              model=args.input)
    from tf2ir.tools.manifest import shown
    outputs: Dict[str, str] = {}
    for job in jobs:
        other = outputs.setdefault(os.path.realpath(job.output), job.name)
        if other != job.name:
            raise ConversionError(f"models {shown(other)} and {shown(job.name)} would both write "
                                  f"{shown(job.output)}; name their outputs in a manifest",
                                  exit_code=EXIT_USAGE)
    if args.report_html:
        from tf2ir.tools.report import INDEX_PAGE, page_name
        pages: Dict[str, str] = {INDEX_PAGE: ""}
        for job in jobs:
            job.report_html = os.path.join(args.report_html, page_name(job.name))
            page = page_name(job.name)
            other = pages.setdefault(page, job.name)
            if other != job.name:
                whose = "the batch index" if page == INDEX_PAGE else f"the page of {shown(other)}"
                raise ConversionError(f"{job.label}: its report page {shown(page)} would "
                                      f"overwrite {whose}", model=manifest, exit_code=EXIT_USAGE)
    _refuse_outputs(jobs, args)       # an output that is an input: the more precise error first
    refuse_escapes(jobs, args.out_dir, args.report_html, manifest)
    for job in jobs:
        job.max_tensor_bytes, job.export = args.max_tensor_bytes, export
    if args.report_html:
        os.makedirs(args.report_html, exist_ok=True)
    if args.shard:
        jobs = shard_jobs(jobs, *parse_shard(args.shard))
    os.makedirs(args.out_dir, exist_ok=True)

    start = time.perf_counter()
    from tf2ir.tools.progress import ProgressBar, wanted
    bar = ProgressBar(len(jobs), enabled=wanted(args.quiet))
    try:
        results = convert_all(jobs, args.jobs, args.plugin_dir, args.force,
                              lambda r: bar.update(r.name, r.status in FAILURES),
                              args.timeout, args.verify)
    finally:
        bar.close()
    seconds = time.perf_counter() - start

    if args.report:
        write_report(args.report, results, args, seconds)
    if args.junit:
        write_junit(args.junit, results, seconds)
    if args.report_html:
        from tf2ir.tools.report import write_index
        write_index(args.report_html, [asdict(r) for r in results], jobs, seconds)
    if args.quiet:
        for r in results:
            if r.status in FAILURES:
                print(f"tf2ir: error: {r.name}: {r.message}", file=sys.stderr)
    else:
        print(format_table(results))
    return batch_exit_status(results)
