"""`tf2ir batch`: convert many frozen models in parallel, skipping unchanged ones, with a
summary table, a JSON report and a JUnit file."""

from __future__ import annotations

import argparse
import functools
import json
import os
import stat
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools.options import add_common, add_fusion_option, add_shape_options

EXIT_OK, EXIT_FAILED = ExitStatus.OK, ExitStatus.FAILED
EXIT_USAGE, EXIT_UNSUPPORTED = ExitStatus.USAGE, ExitStatus.UNSUPPORTED
EXIT_MISMATCH = ExitStatus.MISMATCH
MODEL_SUFFIXES = (".pb", ".pbtxt")
SIDECAR_SUFFIX = ".tf2ir.json"
STATUSES = ("ok", "skipped", "failed", "unsupported", "mismatch")
FAILURES = ("failed", "unsupported", "mismatch")
DEFAULT_TIMEOUT = 600.0       # seconds per model (--timeout)

EPILOG = """INPUT is a directory (every .pb/.pbtxt in it, sorted by name) or a manifest file
(.json; .yaml/.yml when PyYAML is installed): a list of models, or {"models": [...]}, each
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


@dataclass
class Job:
    """One model to convert: where it is, where its ONNX goes, and its own options."""
    name: str                     # as listed: file name in the directory, path in the manifest
    model: str
    output: str
    inputs: List[str] = field(default_factory=list)
    outputs: List[str] = field(default_factory=list)
    fusion: List[str] = field(default_factory=list)
    max_tensor_bytes: Optional[int] = None    # --max-tensor-bytes, the same for every model
    report_html: Optional[str] = None         # --report-html: this model's HTML report
    label: str = ""                           # names it in errors: "model #2 ('a.pb')"

    def __post_init__(self):
        self.label = self.label or f"model {self.name!r}"


@dataclass
class Result:
    name: str
    model: str
    output: str
    status: str                   # ok | skipped | failed | unsupported
    seconds: float = 0.0
    message: str = ""
    exit_code: int = EXIT_OK


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "batch", help="convert many models (a directory or a manifest) in parallel",
        description="Convert every model of a directory or a manifest to ONNX in parallel "
                    "worker processes; one model's failure never stops the others.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="directory of .pb/.pbtxt files, or a manifest (.json, .yaml)")
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
    add_common(parser)
    return parser


# -- the model list ----------------------------------------------------------------------
def _split_list(value) -> List[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConversionError(f"expected a string or a list of strings, got {value!r}", exit_code=EXIT_USAGE)


def _default_output(out_dir: str, name: str) -> str:
    return os.path.join(out_dir, os.path.splitext(os.path.basename(name))[0] + ".onnx")


def jobs_from_directory(directory: str, out_dir: str, defaults: Dict[str, List[str]]) -> List[Job]:
    names = sorted(n for n in os.listdir(directory)
                   if n.endswith(MODEL_SUFFIXES) and os.path.isfile(os.path.join(directory, n)))
    return [Job(n, os.path.join(directory, n), _default_output(out_dir, n), **defaults)
            for n in names]


def jobs_from_manifest(path: str, out_dir: str, defaults: Dict[str, List[str]]) -> List[Job]:
    """The manifest's models (tools/manifest.py reads and checks it); model paths are
    relative to the manifest, outputs to `out_dir`, which no output may leave."""
    from tf2ir.tools.manifest import read_manifest
    base = os.path.dirname(os.path.abspath(path))
    jobs = []
    for entry in read_manifest(path):
        options = {key: getattr(entry, key) if getattr(entry, key) is not None else defaults[key]
                   for key in ("inputs", "outputs", "fusion")}
        output = (os.path.join(out_dir, entry.output) if entry.output
                  else _default_output(out_dir, entry.path))
        jobs.append(Job(entry.path, os.path.join(base, entry.path), output, **options,
                        label=entry.label))
    return sorted(jobs, key=lambda j: j.name)


def refuse_escapes(jobs: Sequence[Job], out_dir: str, pages_dir: Optional[str] = None,
                   manifest: Optional[str] = None) -> None:
    """Before anything is written: every output and sidecar, resolved (symlinks followed),
    stays inside `out_dir` (-o), and every report page inside `pages_dir` (--report-html);
    else a usage error (exit 2) naming the model (its manifest entry)."""
    from tf2ir.tools.manifest import inside, shown
    for job in jobs:
        paths = [(job.output, "output", out_dir, "-o"),
                 (job.output + SIDECAR_SUFFIX, "sidecar", out_dir, "-o")]
        if job.report_html and pages_dir:
            paths.append((job.report_html, "report page", pages_dir, "--report-html"))
        for path, what, root, option in paths:
            if not inside(root, path):
                raise ConversionError(
                    f"{job.label}: its {what} {shown(path)} resolves to "
                    f"{shown(os.path.realpath(path))}, outside {option} {shown(root)}; "
                    "name a path inside it", model=manifest, exit_code=EXIT_USAGE)


def parse_shard(spec: str) -> Tuple[int, int]:
    """'2/4' → (2, 4); I is 1-based."""
    try:
        index, count = (int(part) for part in spec.split("/"))
    except ValueError:
        index = count = 0
    if not (count >= 1 and 1 <= index <= count):
        raise ConversionError(f"bad --shard {spec!r}; expected I/N with 1 <= I <= N (I is 1-based)",
                              exit_code=EXIT_USAGE)
    return index, count


def shard_jobs(jobs: Sequence[Job], index: int, count: int) -> List[Job]:
    """The I-th (1-based) of N contiguous slices; the slices cover every job exactly once."""
    start, stop = len(jobs) * (index - 1) // count, len(jobs) * index // count
    return list(jobs[start:stop])


# -- one model, in a worker process ------------------------------------------------------
def hash_file(path: str, chunk: int = 1 << 20) -> str:
    import hashlib   # here: it loads OpenSSL (~3.5 MB), which `tf2ir convert` never needs
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def _fingerprint(job: Job, plugin_dirs: Sequence[str]) -> dict:
    import tf2ir
    return {"tf2ir_version": tf2ir.__version__, "input_sha256": hash_file(job.model),
            "options": {"inputs": job.inputs, "outputs": job.outputs, "fusion": job.fusion,
                        "plugin_dirs": [os.path.abspath(d) for d in plugin_dirs]}}


def _read_sidecar(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write_sidecar(path: str, record: dict) -> None:
    from tf2ir.ir.atomic import atomic_output
    with atomic_output(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _plugin_manager(plugin_dirs: Tuple[str, ...]):
    """One manager per worker process and plugin-dir set (loading plugins costs time)."""
    from tf2ir.plugins.manager import PluginManager
    return PluginManager(plugin_dirs=list(plugin_dirs))


def convert_one(job: Job, plugin_dirs: Tuple[str, ...] = (), force: bool = False,
                verify: bool = False) -> Result:
    """Convert one model as `tf2ir convert` does (then verify it, with `verify`); never
    raises, the Result says what happened."""
    from tf2ir.parser.pipeline import Options, Pipeline, parse_input_shapes

    start = time.perf_counter()
    sidecar = job.output + SIDECAR_SUFFIX

    def result(status, message="", exit_code=EXIT_OK):
        return Result(job.name, job.model, job.output, status, time.perf_counter() - start,
                      message, exit_code)
    try:
        if not os.path.exists(job.model):
            raise ConversionError("the model file does not exist", model=job.model)
        if not stat.S_ISREG(os.stat(job.model).st_mode):   # a FIFO blocks, /dev/zero never ends
            raise ConversionError("is not a regular file (a directory, FIFO or device)",
                                  model=job.model)
        fingerprint = _fingerprint(job, plugin_dirs)
        if not force and os.path.exists(job.output) and _read_sidecar(sidecar) == fingerprint \
                and (not job.report_html or os.path.exists(job.report_html)):
            if verify:
                _plugin_manager(tuple(plugin_dirs))   # its kernels run the model's plugin ops
                mismatch = _verify(job)
                if mismatch:
                    return result("mismatch", mismatch, EXIT_MISMATCH)
            return result("skipped", "unchanged")
        if os.path.exists(sidecar):
            os.remove(sidecar)   # the output no longer matches what it records
        options = Options(input_shapes=parse_input_shapes(job.inputs),
                          outputs=job.outputs or None, fusion=job.fusion or None,
                          max_tensor_bytes=job.max_tensor_bytes)
        pipeline = Pipeline(_plugin_manager(tuple(plugin_dirs)), options)
        os.makedirs(os.path.dirname(job.output) or ".", exist_ok=True)
        if job.report_html:   # the page is written also when op types are unsupported
            from tf2ir.tools.report import convert_with_report
            convert_with_report(pipeline, job.model, job.output, job.report_html)
        else:
            graph, _ = pipeline.convert_file(job.model)
            pipeline.compile(graph, job.output, model=job.model)
        _write_sidecar(sidecar, fingerprint)
        mismatch = _verify(job) if verify else ""
        return result("mismatch", mismatch, EXIT_MISMATCH) if mismatch else result("ok")
    except ConversionError as exc:
        status = "unsupported" if exc.exit_code == EXIT_UNSUPPORTED else "failed"
        return result(status, _one_line(str(exc)), exc.exit_code)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        return result("failed", f"cannot access{where}: {exc.strerror or exc}", EXIT_FAILED)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        # a bug in tf2ir (or plugin code that ends the process): this model fails, the others go on
        return result("failed", _one_line(f"internal error: {type(exc).__name__}: {exc}"), EXIT_FAILED)


def _verify(job: Job) -> str:
    """'' when the converted model matches TensorFlow, else what `tf2ir verify` says."""
    import io

    from tf2ir.tools.verify import verify_conversion
    out = io.StringIO()
    if verify_conversion(job.model, job.output, out=out) == EXIT_OK:
        return ""
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    return _one_line(lines[-1] if lines else "outputs differ from TensorFlow")


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- the pool ----------------------------------------------------------------------------
def _warm_up() -> None:
    """A worker's imports, before it takes a model (not counted against --timeout)."""
    import tf2ir.ir.onnx.compile  # noqa: F401
    import tf2ir.parser.pipeline  # noqa: F401


def convert_all(jobs: Sequence[Job], workers: int, plugin_dirs=(), force=False,
                on_done=lambda result: None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                verify: bool = False) -> List[Result]:
    """Convert every job in worker processes (tools/workers.py), one model per worker at a
    time: a model that kills its worker or runs past `timeout` seconds fails alone."""
    from tf2ir.tools import workers as pool

    results: Dict[int, Result] = {}

    def on_outcome(index: int, outcome) -> None:
        job = jobs[index]
        if outcome.status == "done":
            result = outcome.value
        else:
            message = {"crashed": "the worker process converting this model crashed",
                       "timeout": f"timed out after {timeout:g} s (--timeout); its worker "
                                  "was stopped",
                       }.get(outcome.status, _one_line(f"worker error: {outcome.value}"))
            result = Result(job.name, job.model, job.output, "failed", outcome.seconds,
                            message, EXIT_FAILED)
        results[index] = result
        on_done(result)

    tasks = [(job, tuple(plugin_dirs), force, verify) for job in jobs]
    pool.run(convert_one, tasks, workers, timeout or None, on_outcome, _warm_up)
    return [results[i] for i in range(len(jobs))]


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
    pipeline_from_args(args)     # bad default options are a usage error, before any work
    defaults = {"inputs": list(args.inputs), "outputs": _split_list(args.outputs),
                "fusion": list(args.fusion)}
    manifest = None                 # the manifest's path, where the models come from one
    if os.path.isdir(args.input):
        jobs = jobs_from_directory(args.input, args.out_dir, defaults)
        if not jobs:
            raise ConversionError("no .pb or .pbtxt models in this directory", model=args.input,
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
        job.max_tensor_bytes = args.max_tensor_bytes
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
