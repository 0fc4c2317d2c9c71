"""The benchmark's tables: conversion (time, peak memory, the peers' beside, what
onnx-simplifier still removes) and latency (tf2ir against tf2onnx, TensorFlow and
OpenVINO, with geometric means), rendered as text or as docs/benchmarks.md's markdown."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple


def geometric_mean(values: List[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


Table = Tuple[List[str], List[List[str]], List[str]]     # header, rows of cells, notes


def _cell(value, fmt: str = ".1f", suffix: str = "") -> str:
    return "" if value is None else f"{value:{fmt}}{suffix}"


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a is not None and b else None


def latency_table(rows: list) -> Optional[Table]:
    """Per model: tf2ir's and tf2onnx's onnxruntime latency at 1 and all threads and their
    ratio, TensorFlow's and tf2ir/TF, OpenVINO's own runtime; the ratios' geometric means."""
    timed = [r for r in rows if r.latency]
    if not timed:
        return None
    header = ["latency ms", "tf2ir 1t", "tf2onnx 1t", "ratio 1t", "tf2ir all", "tf2onnx all",
              "ratio all", "TF 1t", "TF all", "tf2ir/TF 1t", "tf2ir/TF all", "OpenVINO 1t",
              "OpenVINO all", "max abs diff"]
    ratios: Dict[str, List[float]] = {k: [] for k in ("1", "all", "tf1", "tfall")}
    lines = []
    for r in timed:
        ours, peer, tf, ov = (r.latency.get(k, {}) for k in ("tf2ir", "tf2onnx", "tf", "openvino"))
        line = [r.model]
        for threads in ("1", "all"):
            ratio = _ratio(ours.get(threads), peer.get(threads))
            if ratio is not None:
                ratios[threads].append(ratio)
            line += [_cell(ours.get(threads)), _cell(peer.get(threads)) if peer or not r.peer
                     else "failed", _cell(ratio, ".3f")]
        line += [_cell(tf.get("1")), _cell(tf.get("all"))]
        for threads in ("1", "all"):
            ratio = _ratio(ours.get(threads), tf.get(threads))
            if ratio is not None:
                ratios["tf" + threads].append(ratio)
            line.append(_cell(ratio, ".3f"))
        line += [_cell(ov.get("1")), _cell(ov.get("all")), _cell(r.max_error, ".1e")]
        lines.append(line)
    if ratios["1"] or ratios["tf1"]:
        mean = ["geometric mean", "", "", _cell(_gm(ratios["1"]), ".3f"), "", "",
                _cell(_gm(ratios["all"]), ".3f"), "", "", _cell(_gm(ratios["tf1"]), ".3f"),
                _cell(_gm(ratios["tfall"]), ".3f"), "", "", ""]
        lines.append(mean)
    notes = []
    slower = [f"{r.model} ({k})" for r in timed for k in ("1", "all")
              if (_ratio(r.latency["tf2ir"].get(k), r.latency.get("tf2onnx", {}).get(k)) or 0) > 1.0]
    if ratios["1"]:
        notes.append("slower than tf2onnx: " + (", ".join(slower) if slower else "none"))
    return header, lines, notes


def _gm(values: List[float]) -> Optional[float]:
    return geometric_mean(values) if values else None


def conversion_table(rows: list) -> Table:
    """Per model: sizes, node counts, tf2ir's conversion time and peak memory, tf2onnx's and
    OpenVINO's beside (and tf2ir's speed-up), what onnx-simplifier still removes."""
    header = ["model", "pb MB", "TF nodes", "IR nodes", "ONNX nodes", "convert s", "checker s",
              "peak MB", "peak/pb", "tf2onnx s", "tf2onnx MB", "speed-up", "OpenVINO s",
              "OpenVINO MB", "speed-up OV", "onnxsim removes"]
    lines, notes = [], []
    speedups: Dict[str, List[float]] = {"tf2onnx": [], "OpenVINO": []}
    for r in rows:
        m = r.tf2ir
        if not m.ok:
            lines.append([r.model, f"{r.pb_mb:.1f}", f"FAILED: {m.error}"] + [""] * (len(header) - 3))
            continue
        line = [r.model, f"{r.pb_mb:.1f}", str(r.tf_nodes), str(r.ir_nodes), str(r.onnx_nodes),
                f"{m.seconds:.2f}", _cell(r.checker_s, ".2f"), f"{m.peak_mb:.0f}",
                f"{m.peak_mb / r.pb_mb:.2f}" if r.pb_mb else ""]
        for label, peer in (("tf2onnx", r.peer), ("OpenVINO", r.openvino)):
            if peer is None:
                line += ["", "", ""]
            elif not peer.ok:
                line += ["failed", "", ""]
                notes.append(f"{label} failed on {r.model}: {peer.error[:100]}")
            else:
                speedups[label].append(peer.seconds / m.seconds)
                line += [f"{peer.seconds:.2f}", f"{peer.peak_mb:.0f}",
                         f"{peer.seconds / m.seconds:.1f}x"]
        line.append(_cell(r.sim_removes, "d"))
        lines.append(line)
    for label, values in speedups.items():
        if values:
            notes.append(f"conversion speed-up over {label}, geometric mean of {len(values)}: "
                         f"{geometric_mean(values):.1f}x")
    return header, lines, notes


def _drop_empty_columns(table: Table) -> Table:
    header, lines, notes = table
    keep = [i for i in range(len(header)) if i == 0 or any(i < len(l) and l[i] for l in lines)]
    return [header[i] for i in keep], [[l[i] if i < len(l) else "" for i in keep] for l in lines], notes


def render_text(table: Table) -> str:
    header, lines, notes = _drop_empty_columns(table)
    widths = [max([len(header[i])] + [len(l[i]) for l in lines]) for i in range(len(header))]
    out = []
    for cells in [header] + lines:
        if len(cells) > 2 and cells[2].startswith("FAILED"):
            out.append(f"{cells[0]:<{widths[0]}} {cells[1]:>{widths[1]}}  {cells[2]}")
            continue
        out.append(" ".join(f"{c:<{widths[i]}}" if i == 0 else f"{c:>{widths[i]}}"
                            for i, c in enumerate(cells)))
    return "\n".join(out + notes)


def render_markdown(table: Table) -> str:
    header, lines, notes = _drop_empty_columns(table)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in lines]
    return "\n".join(out + ([""] + notes if notes else []))


def write_markdown(rows: list, path: str) -> None:
    """The conversion and latency tables as markdown (what docs/benchmarks.md
    shows), with the versions measured."""
    parts = [f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPU cores: "
             f"{versions()}.", "", render_markdown(conversion_table(rows))]
    table = latency_table(rows)
    if table is not None:
        parts += ["", render_markdown(table)]
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


_VERSIONS_SCRIPT = """
import importlib.metadata as m, json, sys
names = {"onnxruntime": "onnxruntime", "tensorflow": "tensorflow-cpu", "tf2onnx": "tf2onnx",
         "OpenVINO": "openvino", "onnxsim": "onnxsim"}
found = {}
for label, dist in names.items():
    for d in (dist, dist.replace("-cpu", "")):
        try:
            found[label] = m.version(d)
            break
        except m.PackageNotFoundError:
            pass
print(json.dumps(dict(python=sys.version.split()[0], **found)))
"""


def versions() -> str:
    result = subprocess.run([sys.executable, "-c", _VERSIONS_SCRIPT], capture_output=True, text=True)
    if result.returncode != 0:
        return "versions unknown"
    found = json.loads(result.stdout)
    return ", ".join(f"{k} {v}" for k, v in found.items())
