"""`tf2ir batch`: convert many frozen models in parallel, skipping unchanged ones, with a
summary table, a JSON report and a JUnit file."""

from __future__ import annotations

import argparse
import concurrent.futures as futures
import functools
import hashlib
import json
import multiprocessing
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.tools.options import add_common, add_fusion_option, add_shape_options

EXIT_OK, EXIT_FAILED = ExitStatus.OK, ExitStatus.FAILED
EXIT_USAGE, EXIT_UNSUPPORTED = ExitStatus.USAGE, ExitStatus.UNSUPPORTED
MODEL_SUFFIXES = (".pb", ".pbtxt")
SIDECAR_SUFFIX = ".tf2ir.json"
STATUSES = ("ok", "skipped", "failed", "unsupported")

EPILOG = """INPUT is a directory (every .pb/.pbtxt in it, sorted by name) or a manifest file
(.json; .yaml/.yml when PyYAML is installed): a list of models, or {"models": [...]}, each
a path string or {"path": "a.pb", "inputs": ["input:1,224,224,3"], "outputs": ["logits:0"],
"fusion": ["off:gelu"], "output": "a.onnx"}; paths are relative to the manifest. --inputs,
--outputs and --fusion are the defaults for models that do not set their own.

A model whose output exists is skipped when its sidecar OUT.onnx.tf2ir.json records the same
input bytes (sha256), options and tf2ir version; --force converts it anyway.

exit status:
  0  every model converted or was skipped as unchanged
  1  some model failed (bad file, plugin failure, invalid IR, crashed worker)
  2  usage error (bad option, bad manifest)
  3  every failure is a model with op types no plugin maps
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
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no table; failures still go to stderr")
    parser.add_argument("--report", metavar="FILE.json", help="write a JSON report")
    parser.add_argument("--junit", metavar="FILE.xml",
                        help="write a JUnit XML file, one testcase per model")
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


def _load_manifest(path: str):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise ConversionError("a YAML manifest needs PyYAML (pip install pyyaml); "
                                  "or write the manifest as JSON", model=path,
                                  exit_code=EXIT_USAGE) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConversionError(f"not a valid YAML manifest: {str(exc).splitlines()[0]}",
                                  model=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversionError(f"not a valid JSON manifest: {exc}", model=path) from None


def jobs_from_manifest(path: str, out_dir: str, defaults: Dict[str, List[str]]) -> List[Job]:
    data = _load_manifest(path)
    entries = data.get("models") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise ConversionError('a manifest is a list of models or {"models": [...]}',
                              model=path, exit_code=EXIT_USAGE)
    base = os.path.dirname(os.path.abspath(path))
    jobs = []
    for index, entry in enumerate(entries):
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise ConversionError(f"model #{index + 1} has no \"path\"", model=path,
                                  exit_code=EXIT_USAGE)
        unknown = sorted(set(entry) - {"path", "inputs", "outputs", "fusion", "output"})
        if unknown:
            raise ConversionError(f"model {entry['path']!r} has unknown keys {', '.join(unknown)}",
                                  model=path, exit_code=EXIT_USAGE)
        try:
            options = {key: _split_list(entry[key]) if key in entry else defaults[key]
                       for key in ("inputs", "outputs", "fusion")}
        except ConversionError as exc:
            raise exc.located(model=f"{path}, model {entry['path']!r}")
        output = (os.path.join(out_dir, entry["output"]) if entry.get("output")
                  else _default_output(out_dir, entry["path"]))
        jobs.append(Job(entry["path"], os.path.join(base, entry["path"]), output, **options))
    return sorted(jobs, key=lambda j: j.name)


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
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


@functools.lru_cache(maxsize=4)
def _plugin_manager(plugin_dirs: Tuple[str, ...]):
    """One manager per worker process and plugin-dir set (loading plugins costs time)."""
    from tf2ir.plugins.manager import PluginManager
    return PluginManager(plugin_dirs=list(plugin_dirs))


def convert_one(job: Job, plugin_dirs: Tuple[str, ...] = (), force: bool = False) -> Result:
    """Convert one model as `tf2ir convert` does; never raises, the Result says what happened."""
    from tf2ir.parser.pipeline import Options, Pipeline, parse_input_shapes

    start = time.perf_counter()
    sidecar = job.output + SIDECAR_SUFFIX

    def result(status, message="", exit_code=EXIT_OK):
        return Result(job.name, job.model, job.output, status, time.perf_counter() - start,
                      message, exit_code)
    try:
        if not os.path.exists(job.model):
            raise ConversionError("the model file does not exist", model=job.model)
        fingerprint = _fingerprint(job, plugin_dirs)
        if not force and os.path.exists(job.output) and _read_sidecar(sidecar) == fingerprint:
            return result("skipped", "unchanged")
        if os.path.exists(sidecar):
            os.remove(sidecar)   # the output no longer matches what it records
        options = Options(input_shapes=parse_input_shapes(job.inputs),
                          outputs=job.outputs or None, fusion=job.fusion or None)
        pipeline = Pipeline(_plugin_manager(tuple(plugin_dirs)), options)
        graph, _ = pipeline.convert_file(job.model)
        os.makedirs(os.path.dirname(job.output) or ".", exist_ok=True)
        pipeline.compile(graph, job.output, model=job.model)
        _write_sidecar(sidecar, fingerprint)
        return result("ok")
    except ConversionError as exc:
        status = "unsupported" if exc.exit_code == EXIT_UNSUPPORTED else "failed"
        return result(status, _one_line(str(exc)), exc.exit_code)
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        return result("failed", f"cannot access{where}: {exc.strerror or exc}", EXIT_FAILED)
    except Exception as exc:  # a bug in tf2ir: this model fails, the others go on
        return result("failed", _one_line(f"internal error: {type(exc).__name__}: {exc}"), EXIT_FAILED)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# -- the pool ----------------------------------------------------------------------------
def _pool_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


def _run_pool(jobs: Sequence[Job], workers: int, plugin_dirs, force,
              on_done) -> Tuple[Dict[int, Result], List[int]]:
    """Run jobs in a process pool; return the results by job index and the indexes whose
    worker pool broke (a worker died) before they finished."""
    results, broken = {}, []
    with futures.ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context()) as pool:
        pending = {pool.submit(convert_one, job, tuple(plugin_dirs), force): i
                   for i, job in enumerate(jobs)}
        for future in futures.as_completed(pending):
            index = pending[future]
            try:
                results[index] = future.result()
            except futures.process.BrokenProcessPool:
                broken.append(index)
                continue
            except Exception as exc:   # e.g. a result that could not be sent back
                job = jobs[index]
                results[index] = Result(job.name, job.model, job.output, "failed", 0.0,
                                        _one_line(f"worker error: {type(exc).__name__}: {exc}"),
                                        EXIT_FAILED)
            on_done(results[index])
    return results, sorted(broken)


def convert_all(jobs: Sequence[Job], workers: int, plugin_dirs=(), force=False,
                on_done=lambda result: None) -> List[Result]:
    """Convert every job in parallel. When a worker dies, every job that was in flight is
    rerun alone, so only the model that kills its worker is reported as crashed."""
    if not jobs:
        return []
    results, broken = _run_pool(jobs, max(1, min(workers, len(jobs))), plugin_dirs, force, on_done)
    for index in broken:
        alone, crashed = _run_pool([jobs[index]], 1, plugin_dirs, force, on_done)
        if crashed:
            job = jobs[index]
            alone = {0: Result(job.name, job.model, job.output, "failed", 0.0,
                               "the worker process converting this model crashed", EXIT_FAILED)}
            on_done(alone[0])
        results[index] = alone[0]
    return [results[i] for i in range(len(jobs))]


# -- what the user sees ------------------------------------------------------------------
def format_table(results: Sequence[Result]) -> str:
    rows = [("MODEL", "STATUS", "SECONDS", "MESSAGE")]
    rows += [(r.name, r.status, f"{r.seconds:.2f}", r.message) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:>{widths[2]}}  {d}".rstrip()
             for a, b, c, d in rows]
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
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
        "failures": str(sum(r.status in ("failed", "unsupported") for r in results)),
        "errors": "0", "skipped": str(sum(r.status == "skipped" for r in results)),
        "time": f"{seconds:.3f}"})
    for r in results:
        case = ET.SubElement(suite, "testcase", {"classname": "tf2ir.batch", "name": r.name,
                                                 "time": f"{r.seconds:.3f}"})
        if r.status in ("failed", "unsupported"):
            failure = ET.SubElement(case, "failure", {"type": r.status, "message": r.message})
            failure.text = r.message
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", {"message": r.message})
    ET.indent(suites)
    _atomic_write(path, ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def _atomic_write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def batch_exit_status(results: Sequence[Result]) -> int:
    failed = [r for r in results if r.status in ("failed", "unsupported")]
    if not failed:
        return EXIT_OK
    return EXIT_UNSUPPORTED if all(r.status == "unsupported" for r in failed) else EXIT_FAILED


def run(args) -> int:
    from tf2ir.tools.options import pipeline_from_args

    if args.jobs < 1:
        raise ConversionError(f"bad -j {args.jobs}; expected at least 1", exit_code=EXIT_USAGE)
    pipeline_from_args(args)     # bad default options are a usage error, before any work
    defaults = {"inputs": list(args.inputs), "outputs": _split_list(args.outputs),
                "fusion": list(args.fusion)}
    if os.path.isdir(args.input):
        jobs = jobs_from_directory(args.input, args.out_dir, defaults)
        if not jobs:
            raise ConversionError("no .pb or .pbtxt models in this directory", model=args.input,
                                  exit_code=EXIT_USAGE)
    elif os.path.isfile(args.input):
        jobs = jobs_from_manifest(args.input, args.out_dir, defaults)
    else:
        raise ConversionError("the input does not exist (expected a directory or a manifest)",
                              model=args.input)
    outputs: Dict[str, str] = {}
    for job in jobs:
        other = outputs.setdefault(os.path.abspath(job.output), job.name)
        if other != job.name:
            raise ConversionError(f"models {other!r} and {job.name!r} would both write {job.output}; "
                                  "name their outputs in a manifest", exit_code=EXIT_USAGE)
    if args.shard:
        jobs = shard_jobs(jobs, *parse_shard(args.shard))
    os.makedirs(args.out_dir, exist_ok=True)

    start = time.perf_counter()
    from tf2ir.tools.progress import ProgressBar, wanted
    bar = ProgressBar(len(jobs), enabled=wanted(args.quiet))
    try:
        results = convert_all(jobs, args.jobs, args.plugin_dir, args.force, lambda r: bar.update(r.name, r.status in ("failed", "unsupported")))
    finally:
        bar.close()
    seconds = time.perf_counter() - start

    if args.report:
        write_report(args.report, results, args, seconds)
    if args.junit:
        write_junit(args.junit, results, seconds)
    if args.quiet:
        for r in results:
            if r.status in ("failed", "unsupported"):
                print(f"tf2ir: error: {r.name}: {r.message}", file=sys.stderr)
    else:
        print(format_table(results))
    return batch_exit_status(results)
