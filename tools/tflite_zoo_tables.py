"""The TFLite zoo's markdown: the tf2ir table, the peers' table, failure lines, op types and
the op types still missing (tools/tflite_zoo.py)."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence

from tf2ir.tools.tflite_zoo_run import PeerResult, Row

PEER_TITLES = {"tf2onnx": "tf2onnx --tflite", "openvino": "OpenVINO"}


def _num(value: Optional[float], fmt: str = ".2g") -> str:
    return "-" if value is None else format(value, fmt)


def _sec(value: Optional[float]) -> str:
    """Seconds or milliseconds: 2 decimals, 3 significant digits below 0.1."""
    if value is None:
        return "-"
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def _error(flavour: str, rel: Optional[float], steps: Optional[float], absolute: Optional[float]) -> str:
    if absolute is None:
        return "-"
    if flavour == "int8" and steps is not None:
        return f"{steps:.1f} steps"
    return f"{absolute:.1e} ({_num(rel, '.0e')})"


def _peer_cell(flavour: str, p: Optional[PeerResult]) -> str:
    if p is None:
        return "-"
    if not p.converted:
        return "fails"
    if p.ms is None:
        return f"{_sec(p.convert_s)} s, fails to run"
    return (f"{_sec(p.convert_s)} s · {_error(flavour, p.rel_error, p.steps, p.max_abs_error)} · "
            f"{_sec(p.ms)} ms")


def format_markdown(rows: List[Row], peers: Sequence[str]) -> str:
    lines = ["| model | flavour | TFLite ops | tf2ir | convert s | max error (/ spread) | "
             "ORT ms | x float | LiteRT ms |",
             "|---|---|---:|---|---:|---|---:|---:|---:|"]
    for r in rows:
        status = r.status + (f" ({r.note})" if r.note else "")
        lines.append(f"| {r.model} | {r.flavour} | {r.tflite_ops or '-'} | {status} | "
                     f"{_sec(r.convert_s)} | {_error(r.flavour, r.rel_error, r.steps, r.max_abs_error)} | "
                     f"{_sec(r.ort_ms)} | {_num(r.vs_float, '.2f')} | {_sec(r.litert_ms)} |")
    ok = sum(r.ok for r in rows)
    lines.append("")
    lines.append(f"{ok}/{len(rows)} rows convert and match the LiteRT interpreter. Max error: absolute, "
                 "in brackets relative to the output's spread; full int8 in quantization steps. "
                 "ORT ms, LiteRT ms: median latency, batch 1; x float: ORT ms over the float flavour's.")
    if peers:
        lines += ["", "| model | flavour | tf2ir | " + " | ".join(PEER_TITLES[p] for p in peers) + " |",
                  "|---|---|---|" + "---|" * len(peers)]
        for r in rows:
            own = PeerResult(r.converted, r.convert_s, r.max_abs_error, r.rel_error, r.steps, r.ort_ms)
            cells = [_peer_cell(r.flavour, own)] + [_peer_cell(r.flavour, r.peers.get(p)) for p in peers]
            lines.append(f"| {r.model} | {r.flavour} | " + " | ".join(cells) + " |")
        lines += ["", "Each cell: conversion seconds · max error against the interpreter · "
                  "median latency (tf2ir and tf2onnx in onnxruntime, OpenVINO on its CPU plugin)."]
    lines += ["", "TFLite op types (the first flavour's; the others' differences):", ""] + op_type_lines(rows)
    failures = [f"- {r.model} {r.flavour} (tf2ir): {r.error}" for r in rows if r.error]
    failures += [f"- {r.model} {r.flavour} ({p}): {res.error}" for r in rows
                 for p, res in r.peers.items() if res.error]
    if failures:
        lines += ["", "Failures:", ""] + failures
    return "\n".join(lines)


def op_type_lines(rows: List[Row]) -> List[str]:
    """Per model: its first built flavour's op types with counts, then what each other
    flavour has more or fewer of (full int8: the QUANTIZE/DEQUANTIZE it adds)."""
    by_model: Dict[str, List[Row]] = defaultdict(list)
    for r in rows:
        if r.op_types:
            by_model[r.model].append(r)
    lines = []
    for model, built in by_model.items():
        first = built[0]
        text = ", ".join(f"{op} x{n}" for op, n in first.op_types.items())
        for r in built[1:]:
            diff = {op: r.op_types.get(op, 0) - first.op_types.get(op, 0)
                    for op in sorted(set(r.op_types) | set(first.op_types))}
            changes = ", ".join(f"{op} {n:+d}" for op, n in diff.items() if n)
            if changes:
                text += f"; {r.flavour}: {changes}"
        lines.append(f"- {model} ({first.flavour}): {text}")
    return lines


def missing_notes(rows: List[Row]) -> str:
    """Markdown: per model and flavour, the op types and those tf2ir maps no plugin for;
    then each missing op type with the models that need it."""
    lines = ["# TFLite zoo: op types tf2ir does not map yet", "",
             "Written by `python -m tf2ir.tools.tflite_zoo --missing-notes`.", ""]
    needed: Dict[str, List[str]] = defaultdict(list)
    for r in rows:
        if not r.op_types:
            lines.append(f"- {r.model} {r.flavour}: not built ({r.error})")
            continue
        ops = ", ".join(f"{op} x{n}" for op, n in r.op_types.items())
        missing = ", ".join(r.missing) or "none"
        lines.append(f"- {r.model} {r.flavour} [{r.status}]: missing {missing}; ops: {ops}")
        if r.status != "ok" and not r.missing and r.error:
            lines.append(f"  - fails with: {r.error}")
        for op in r.missing:
            needed[op].append(f"{r.model} {r.flavour}")
    if needed:
        lines += ["", "## Missing op types, by the rows that need them", ""]
        for op, where in sorted(needed.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            lines.append(f"- {op} ({len(where)}): {', '.join(where)}")
    return "\n".join(lines) + "\n"
