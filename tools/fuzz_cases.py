"""The fuzz harness's kinds and cases (tools/fuzz.py): the kinds and outcomes it knows, the seed
corpus (tools/fuzz_seeds.py's graphs, sample_cnn.pb, their IR, the SavedModel seeds), the
`index`th case of a kind under a seed, and reproducers saved as files and loaded again."""

from __future__ import annotations

import json
import os
import random
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Sequence

from tf2ir.tools.fuzz_core import Corpus, check_model_file
from tf2ir.tools.fuzz_mutate import mutate_bytes
from tf2ir.tools.fuzz_mutate_graph import mutate_graph_def
from tf2ir.tools.fuzz_mutate_ir import _IR_TOKEN, mutate_ir
from tf2ir.tools.fuzz_seeds import seed_graphs

KINDS = ("pb", "pbtxt", "ir", "savedmodel", "manifest")
OUTCOMES = ("ok", "error", "crash", "hang", "memory", "abort", "invalid", "corrupt", "escape")
DEFECTS = ("crash", "hang", "memory", "abort", "invalid", "corrupt", "escape")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the tf2ir package root
SAMPLE_CNN = os.path.join(ROOT, "tests", "data", "sample_cnn.pb")


# == the corpus =============================================================================
CONVERTER_OPS = ("Const", "Placeholder", "Identity", "NoOp", "CheckNumerics", "EnsureShape",
                 "PreventGradient", "Snapshot", "StopGradient", "PlaceholderWithDefault")


def build_corpus(manager=None, extra: Sequence[str] = (), kinds: Sequence[str] = KINDS) -> Corpus:
    """The seed corpus: sample_cnn.pb, the built seed graphs, files in `extra` (.pb/.pbtxt
    paths or directories of them), the IR of each that converts and, when `kinds` has
    savedmodel, the seed SavedModels (tools/fuzz_saved_model.py, made with TensorFlow)."""
    from google.protobuf import text_format
    from tensorboard.compat.proto import graph_pb2

    from tf2ir.ir.text import save
    from tf2ir.parser.pipeline import Pipeline
    graphs = []
    if os.path.exists(SAMPLE_CNN):
        with open(SAMPLE_CNN, "rb") as f:
            graphs.append(("sample_cnn", f.read()))
    graphs.extend(seed_graphs())
    for path in _expand(extra):
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".pbtxt"):
            graph_def = graph_pb2.GraphDef()
            text_format.Parse(data.decode("utf-8"), graph_def)
            data = graph_def.SerializeToString(deterministic=True)
        graphs.append((os.path.basename(path), data))
    pipeline = Pipeline(manager)
    irs = []
    with tempfile.TemporaryDirectory(prefix="tf2ir-fuzz-") as tmp:
        path = os.path.join(tmp, "seed.ir")
        _warm_up(pipeline, graphs[0][1], tmp)
        for name, data in graphs:
            graph_def = graph_pb2.GraphDef()
            graph_def.ParseFromString(data)
            try:
                graph, _ = pipeline.convert_graph_def(graph_def, name)
                save(graph, path)
            except Exception:   # a seed that does not convert gives no IR seed
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path + ".weights", "rb") as f:
                irs.append((name, text, f.read()))
    op_types = sorted(set(pipeline.manager.registry) | set(CONVERTER_OPS))
    tokens, lines = set(), set()
    for _, text, _ in irs:
        for line in text.split("\n"):
            lines.add(line)
            tokens.update(m.group() for m in _IR_TOKEN.finditer(line))
    saved_models = []
    if "savedmodel" in kinds:
        from tf2ir.tools.fuzz_saved_model import load_seeds
        saved_models = load_seeds()
    return Corpus(graphs, irs, op_types, sorted(tokens), sorted(lines), saved_models)


def _warm_up(pipeline, data: bytes, tmp: str) -> None:
    """Convert, compile and check one seed here, so that the modules a case needs are
    imported before workers fork: every worker runs the code as it was at start."""
    import importlib
    for module in ("tf2ir.ir.infer", "tf2ir.ir.text"):   # what compile cases need
        importlib.import_module(module)
    path = os.path.join(tmp, "warm.pb")
    with open(path, "wb") as f:
        f.write(data)
    try:
        graph, _ = pipeline.convert_file(path)
        pipeline.compile(graph, os.path.join(tmp, "warm.onnx"))
        check_model_file(os.path.join(tmp, "warm.onnx"))
    except Exception:
        pass


def _expand(paths: Sequence[str]) -> List[str]:
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(os.path.join(path, n) for n in sorted(os.listdir(path))
                         if n.endswith((".pb", ".pbtxt")))
        else:
            found.append(path)
    return found


# == cases ==================================================================================
@dataclass
class Case:
    """One input: its kind, its files (suffix → bytes, the first is the model), and how it
    was made (index under the run's seed, the seed corpus entry, the mutations)."""

    kind: str
    index: int
    files: Dict[str, bytes]
    origin: str = ""
    mutations: List[str] = field(default_factory=list)
    special: Dict[str, str] = field(default_factory=dict)   # path key → fifo, devzero, link:…

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.files.values())


def case_rng(seed: int, kind: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{kind}:{index}")


def make_case(corpus: Corpus, kind: str, index: int, seed: int = 0) -> Case:
    """The `index`th case of `kind` under `seed`: the same bytes on every call."""
    rng = case_rng(seed, kind, index)
    if kind == "pb":
        name, data = rng.choice(corpus.graphs)
        ops: List[str] = []
        data = mutate_bytes(data, rng, corpus, ops)
        return Case(kind, index, {".pb": data}, name, ops)
    if kind == "pbtxt":
        name, data = rng.choice(corpus.graphs)
        ops = []
        files = mutate_graph_def(data, rng, corpus, ops)
        return Case(kind, index, files, name, ops)
    if kind == "ir":
        name, text, weights = rng.choice(corpus.irs)
        ops = []
        files = mutate_ir(text, weights, rng, corpus, ops)
        return Case(kind, index, files, name, ops)
    if kind == "savedmodel":
        from tf2ir.tools.fuzz_saved_model import PREFIX, mutate_saved_model
        if not corpus.saved_models:
            raise RuntimeError("no SavedModel seeds (TensorFlow is needed to make them once)")
        name, seed_files = rng.choice(corpus.saved_models)
        ops = []
        files, special = mutate_saved_model(seed_files, rng, corpus, ops)
        files = {PREFIX + k: v for k, v in files.items()}
        return Case(kind, index, files, name, ops, {PREFIX + k: v for k, v in special.items()})
    if kind == "manifest":
        from tf2ir.tools.fuzz_manifest import make_manifest_case
        ops = []
        files, special, origin = make_manifest_case(corpus, rng, ops)
        return Case(kind, index, files, origin, ops, special)
    raise ValueError(f"unknown kind {kind!r}")


# == reproducers =============================================================================
TREES = (".savedmodel", ".manifest")   # the kinds whose case is a folder


def save_case(case: Case, base: str) -> str:
    """Write a case's files as `base` + suffix (a folder `base.savedmodel/` or
    `base.manifest/` for those kinds, with its special entries in `base.json`); the path
    to replay."""
    import shutil
    for suffix in (".pb", ".pbtxt", ".ir", ".ir.weights") + TREES:
        path = base + suffix
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.remove(path)
    for suffix, data in case.files.items():
        os.makedirs(os.path.dirname(base + suffix) or ".", exist_ok=True)
        with open(base + suffix, "wb") as f:
            f.write(data)
    first = next(iter(case.files))
    if case.kind in ("savedmodel", "manifest"):
        if not os.path.exists(base + ".json"):
            with open(base + ".json", "w", encoding="utf-8") as f:
                json.dump({"kind": case.kind, "origin": case.origin, "mutations": case.mutations,
                           "special": case.special}, f, indent=2)
        return base + first.split("/")[0]
    return base + first


def load_case(path: str) -> Case:
    """A saved reproducer (.pb, .pbtxt, .ir with .ir.weights beside it, a .savedmodel or
    .manifest folder with its .json beside it, or the .json)."""
    path = path.rstrip(os.sep)
    if path.endswith(".json"):
        base = path[:-5]
        path = next((base + s for s in (".pb", ".pbtxt", ".ir") + TREES if os.path.exists(base + s)),
                    path)
    if path.endswith(TREES):
        base, suffix = os.path.splitext(path)
        files = {}
        for dirpath, dirnames, names in os.walk(path):
            dirnames.sort()
            for n in sorted(names):
                full = os.path.join(dirpath, n)
                if os.path.isfile(full) and not os.path.islink(full):
                    with open(full, "rb") as f:
                        files[suffix + "/" + os.path.relpath(full, path)] = f.read()
        sidecar = {}
        if os.path.exists(base + ".json"):
            with open(base + ".json", encoding="utf-8") as f:
                sidecar = json.load(f)
        if suffix == ".manifest":   # the manifest is the first file
            first = [k for k in files if os.path.basename(k).startswith("list.")]
            files = {k: files[k] for k in first + [k for k in files if k not in first]}
        elif ".savedmodel/saved_model.pb" in files:
            files = {".savedmodel/saved_model.pb": files.pop(".savedmodel/saved_model.pb"), **files}
        kind = "savedmodel" if suffix == ".savedmodel" else "manifest"
        return Case(kind, 0, files, origin=sidecar.get("origin", path),
                    mutations=sidecar.get("mutations", []), special=sidecar.get("special", {}))
    if path.endswith(".ir.weights"):
        path = path[:-len(".weights")]
    suffix = ".ir" if path.endswith(".ir") else ".pbtxt" if path.endswith(".pbtxt") else ".pb"
    files = {}
    with open(path, "rb") as f:
        files[suffix] = f.read()
    if suffix == ".ir" and os.path.exists(path + ".weights"):
        with open(path + ".weights", "rb") as f:
            files[".ir.weights"] = f.read()
    kind = {".ir": "ir", ".pbtxt": "pbtxt", ".pb": "pb"}[suffix]
    return Case(kind, 0, files, origin=path)
