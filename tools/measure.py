"""Measuring a child process: its wall time and its own peak memory (bench and zoo), and the
conversion-speed check of issue 22: `tf2ir convert` beside the floor, interleaved.

    python -m tf2ir.tools.measure [-n RUNS] -- CMD [ARGS] [--- CMD2 ...]
    python -m tf2ir.tools.measure --make chain /tmp/chain.pb           # 200,000 Relu/Neg nodes
    python -m tf2ir.tools.measure --make ResNet50 /tmp/ResNet50.pb     # keras.applications, frozen
    python -m tf2ir.tools.measure -n 5 --convert /tmp/models/ResNet50.pb

`--convert MODEL` measures `tf2ir convert MODEL -o TMP -v` (its phase times parsed from the
`-v` lines) interleaved with the floor of the same model: a child process that imports numpy
and onnx, parses the GraphDef with protobuf and writes an ONNX model holding the same weights
(the least any converter of that file must do); it prints both and their ratio.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence


@dataclass
class Measure:
    seconds: float
    peak_mb: float
    ok: bool
    error: str = ""
    cpu_seconds: float = 0.0   # user + system: steadier than the wall on a busy machine
    phases: Dict[str, float] = field(default_factory=dict)   # `tf2ir ... -v` phase lines


# `tf2ir -v` prints one line per phase: "tf2ir: mapping  12.917 s".
_PHASE = re.compile(r"^tf2ir: (\w+) +([0-9.]+) s$", re.MULTILINE)


def run_measured(cmd: List[str], env: Optional[Dict[str, str]] = None) -> Measure:
    """Run `cmd` as a child process: wall seconds and its own peak RSS (os.wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = stderr.decode(errors="replace")
    error = "" if proc.returncode == 0 else text.strip().splitlines()[-1:]
    phases = {name: float(value) for name, value in _PHASE.findall(text)}
    return Measure(seconds, usage.ru_maxrss / 1024.0, proc.returncode == 0,
                   error[0] if error else "", usage.ru_utime + usage.ru_stime, phases)


def repeat_measured(commands: Sequence[List[str]], runs: int,
                    env: Optional[Dict[str, str]] = None) -> List[List[Measure]]:
    """Each command run `runs` times, interleaved (a busy machine slows all alike)."""
    results: List[List[Measure]] = [[] for _ in commands]
    for _ in range(runs):
        for i, cmd in enumerate(commands):
            results[i].append(run_measured(cmd, env))
    return results


def installed_like_env(cache: str) -> Dict[str, str]:
    """The environment with Python's bytecode cache on, under `cache`: an installed package
    has its modules compiled (pip does it), while PYTHONDONTWRITEBYTECODE=1 over a source
    checkout recompiles every tf2ir module in every run (about 0.13 s CPU; the floor imports
    only installed packages and would not pay it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


# -- the models of the speed check ---------------------------------------------------------
def chain_graph_def(nodes: int = 200_000, width: int = 16):
    """A Placeholder [1, width] float followed by `nodes` nodes alternating Relu and Neg, each
    reading the one before: the graph whose conversion time shows any per-node cost."""
    from tensorboard.compat.proto import graph_pb2
    graph_def = graph_pb2.GraphDef()
    node = graph_def.node.add(name="x", op="Placeholder")
    node.attr["dtype"].type = 1   # DT_FLOAT
    for size in (1, width):
        node.attr["shape"].shape.dim.add(size=size)
    previous = "x"
    for i in range(nodes):
        node = graph_def.node.add(name=f"n{i}", op="Neg" if i % 2 else "Relu", input=[previous])
        node.attr["T"].type = 1
        previous = node.name
    return graph_def


def make_model(name: str, path: str, nodes: int = 200_000) -> str:
    """Write model `name` to `path`: "chain" (chain_graph_def) or a keras.applications name
    frozen by tools/models.py (ResNet50: TensorFlow builds it, weights=None, nothing is
    downloaded)."""
    if name == "chain":
        data = chain_graph_def(nodes).SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        return path
    from tf2ir.tools.models import freeze_keras_application
    with tempfile.TemporaryDirectory() as tmp:
        frozen = freeze_keras_application(name, tmp)
        os.replace(frozen.path, path)
    return path


# TF DataType → numpy dtype name, for the floor's constants.
_TF_DTYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
              9: "int64", 10: "bool", 17: "uint16", 19: "float16", 22: "uint32", 23: "uint64"}
_VAL_FIELDS = {"float32": "float_val", "float64": "double_val", "int64": "int64_val",
               "bool": "bool_val", "float16": "half_val", "uint32": "uint32_val",
               "uint64": "uint64_val"}


def floor(model: str, out: str) -> int:
    """The floor of converting `model`: import numpy and onnx, parse the GraphDef with
    protobuf, write an ONNX model whose initializers are the model's Const tensors."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper
    from tensorboard.compat.proto import graph_pb2
    with open(model, "rb") as f:
        graph_def = graph_pb2.GraphDef.FromString(f.read())
    initializers = []
    for node in graph_def.node:
        if node.op != "Const" or node.attr["value"].WhichOneof("value") != "tensor":
            continue
        tensor = node.attr["value"].tensor
        dtype = _TF_DTYPES.get(tensor.dtype)
        if dtype is None:
            continue
        shape = [d.size for d in tensor.tensor_shape.dim]
        if tensor.tensor_content:
            array = np.frombuffer(tensor.tensor_content, dtype=dtype).reshape(shape)
        else:
            values = np.asarray(getattr(tensor, _VAL_FIELDS.get(dtype, "int_val")))
            if dtype == "float16":
                values = values.astype(np.uint16).view(np.float16)
            count = int(np.prod(shape))   # TF repeats the last value to fill the shape
            if values.size != count:
                values = np.full(count, values[-1] if values.size else 0)
            array = np.ascontiguousarray(values.reshape(shape), dtype=dtype)
        initializers.append(numpy_helper.from_array(array, node.name))
    graph = helper.make_graph([], "floor", [], [], initializer=initializers)
    onnx.save(helper.make_model(graph), out)
    return 0


def _stats(values: Sequence[float]) -> str:
    import statistics
    return f"median {statistics.median(values):.3f} s  min {min(values):.3f} s"


def _print_row(label: str, measures: List[Measure]) -> None:
    import statistics
    failed = [m for m in measures if not m.ok]
    print(f"wall {_stats([m.seconds for m in measures])}  "
          f"cpu {_stats([m.cpu_seconds for m in measures])}  "
          f"peak median {statistics.median(m.peak_mb for m in measures):.1f} MB  "
          f"max {max(m.peak_mb for m in measures):.1f} MB"
          f"{f'  ({len(failed)} failed: {failed[0].error})' if failed else ''}  {label}")
    names = [name for name in measures[0].phases]
    if names:
        print("    phases (median s): " + "  ".join(
            f"{name} {statistics.median(m.phases.get(name, 0.0) for m in measures):.3f}"
            for name in names))


def _ratio(name: str, a: List[Measure], b: List[Measure]) -> None:
    import statistics
    for what, get in (("wall", lambda m: m.seconds), ("cpu", lambda m: m.cpu_seconds)):
        pairs = [get(x) / get(y) for x, y in zip(a, b) if get(y) > 0]
        if pairs:
            print(f"    {what} ratio to the floor: median {statistics.median(pairs):.2f}  "
                  f"min {min(pairs):.2f}  max {max(pairs):.2f}  (pair by pair)  {name}")


def convert_against_floor(models: Sequence[str], runs: int, bytecode: bool = True) -> None:
    """`tf2ir convert MODEL -v` and the floor of MODEL, interleaved, for each model, after
    one run of each that is not counted; `bytecode`: with a bytecode cache (installed_like_env)."""
    import shlex
    with tempfile.TemporaryDirectory() as tmp:
        env = installed_like_env(os.path.join(tmp, "pycache")) if bytecode else None
        commands, labels = [], []
        for i, model in enumerate(models):
            out = os.path.join(tmp, f"{i}.onnx")
            commands.append([sys.executable, "-m", "tf2ir.tools.cli", "convert", model,
                             "-o", out, "-v"])
            commands.append([sys.executable, "-m", "tf2ir.tools.measure", "--floor-of",
                             model, os.path.join(tmp, f"{i}.floor.onnx")])
            labels += [f"tf2ir convert {shlex.quote(model)}", f"floor {shlex.quote(model)}"]
        repeat_measured(commands, 1, env)   # warm-up: caches filled, not counted
        results = repeat_measured(commands, runs, env)
        print(f"{runs} interleaved runs after a warm-up; bytecode cache "
              f"{'on (as installed)' if bytecode else 'as the environment says'}")
        for i, model in enumerate(models):
            convert, base = results[2 * i], results[2 * i + 1]
            _print_row(labels[2 * i], convert)
            _print_row(labels[2 * i + 1], base)
            _ratio(model, convert, base)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """python -m tf2ir.tools.measure [-n RUNS] -- CMD [ARGS] [--- CMD2 ...]: each command's
    median and least wall time and peak memory over RUNS interleaved runs."""
    import argparse
    import shlex
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.measure",
                                     description=main.__doc__.split(":")[0] if main.__doc__ else "")
    parser.add_argument("-n", "--runs", type=int, default=10)
    parser.add_argument("--convert", action="append", default=[], metavar="MODEL",
                        help="measure `tf2ir convert MODEL -v` (phases too) beside the floor of "
                             "MODEL, interleaved, and print their ratio (repeatable)")
    parser.add_argument("--make", nargs=2, metavar=("NAME", "PATH"),
                        help="write a model of the speed check: 'chain' (--chain-nodes Relu/Neg "
                             "nodes) or a keras.applications name such as ResNet50")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="--convert: leave PYTHONDONTWRITEBYTECODE as it is (by default the "
                             "children compile tf2ir's modules once, into a temporary cache, "
                             "as an installed package has them)")
    parser.add_argument("--chain-nodes", type=int, default=200_000)
    parser.add_argument("--floor-of", nargs=2, metavar=("MODEL", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the command; several are separated by ---")
    args = parser.parse_args(argv)
    if args.floor_of:
        return floor(*args.floor_of)
    if args.make:
        print(make_model(args.make[0], args.make[1], args.chain_nodes))
        return 0
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    commands: List[List[str]] = [[]]
    for word in words:
        if word == "---":
            commands.append([])
        else:
            commands[-1].append(word)
    commands = [c for c in commands if c]
    if not commands and not args.convert:
        parser.error("no command given")
    if args.convert:
        convert_against_floor(args.convert, args.runs, not args.no_bytecode_cache)
    for cmd, measures in zip(commands, repeat_measured(commands, args.runs)):
        _print_row(shlex.join(cmd), measures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
