"""`tf2ir batch`'s conversions (tools/batch.py): one model converted as `tf2ir convert` does,
skipped when its sidecar records the same input, options and version, verified on request;
and every model in worker processes (tools/workers.py), each failing alone."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import stat
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions
from tf2ir.tools.batch_jobs import SIDECAR_SUFFIX, Job

EXIT_OK, EXIT_FAILED = ExitStatus.OK, ExitStatus.FAILED
EXIT_UNSUPPORTED, EXIT_MISMATCH = ExitStatus.UNSUPPORTED, ExitStatus.MISMATCH
DEFAULT_TIMEOUT = 600.0       # seconds per model (--timeout)


@dataclass
class Result:
    name: str
    model: str
    output: str
    status: str                   # ok | skipped | failed | unsupported
    seconds: float = 0.0
    message: str = ""
    exit_code: int = EXIT_OK



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
    options = {"inputs": job.inputs, "outputs": job.outputs, "fusion": job.fusion,
               "plugin_dirs": [os.path.abspath(d) for d in plugin_dirs]}
    if job.export is not None and not job.export.default:   # (sidecars before it stay valid)
        # as the sidecar's JSON gives it back (tuples as lists)
        options["export"] = json.loads(json.dumps(dataclasses.asdict(job.export)))
    return {"tf2ir_version": tf2ir.__version__, "input_sha256": hash_file(job.model),
            "options": options}


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
                # the kernels of its plugin manager's prototypes run the model's plugin ops
                mismatch = _verify(job, _plugin_manager(tuple(plugin_dirs)).prototype_table)
                if mismatch:
                    return result("mismatch", mismatch, EXIT_MISMATCH)
            return result("skipped", "unchanged")
        if os.path.exists(sidecar):
            os.remove(sidecar)   # the output no longer matches what it records
        options = Options(input_shapes=parse_input_shapes(job.inputs),
                          outputs=job.outputs or None, fusion=job.fusion or None,
                          max_tensor_bytes=job.max_tensor_bytes,
                          export=job.export if job.export is not None else ExportOptions())
        pipeline = Pipeline(_plugin_manager(tuple(plugin_dirs)), options)
        os.makedirs(os.path.dirname(job.output) or ".", exist_ok=True)
        if job.report_html:   # the page is written also when op types are unsupported
            from tf2ir.tools.report import convert_with_report
            convert_with_report(pipeline, job.model, job.output, job.report_html)
        else:
            graph, _ = pipeline.convert_file(job.model)
            pipeline.compile(graph, job.output, model=job.model)
        _write_sidecar(sidecar, fingerprint)
        mismatch = _verify(job, pipeline.prototypes) if verify else ""
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


def _verify(job: Job, prototypes=None) -> str:
    """'' when the converted model matches TensorFlow, else what `tf2ir verify` says; plugin
    ops run by the kernels of prototype table `prototypes` (the worker's plugin manager's)."""
    import io

    from tf2ir.tools.verify import verify_conversion
    out = io.StringIO()
    if verify_conversion(job.model, job.output, out=out, prototypes=prototypes) == EXIT_OK:
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
