"""`tf2ir batch`'s model list (tools/batch.py): the jobs of a directory or a manifest (read and
checked by tools/manifest.py), outputs refused where they would leave -o, and shards."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from tf2ir.ir.errors import ConversionError, ExitStatus
from tf2ir.ir.export import ExportOptions

EXIT_USAGE = ExitStatus.USAGE
MODEL_SUFFIXES = (".pb", ".pbtxt", ".tflite")
SIDECAR_SUFFIX = ".tf2ir.json"


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
    export: Optional[ExportOptions] = None    # --opset, --precision, ...: the same for every model
    report_html: Optional[str] = None         # --report-html: this model's HTML report
    label: str = ""                           # names it in errors: "model #2 ('a.pb')"

    def __post_init__(self):
        self.label = self.label or f"model {self.name!r}"


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
