"""The fuzz harness's manifest mode (tools/fuzz.py, kind `manifest`).

A case is a sandbox folder with a batch manifest (JSON, or YAML) in `in/`, the models it may
name (two small seed graphs, a FIFO `fifo.pb`, a symlink to /dev/zero `zero.pb`, a symlink
leaving `in/` `up.pb`), an `outside/` folder holding files an attacker would overwrite, and
the output folder `out/` (holding `escape`, a symlink to `outside/`). The manifest is

  generated  a list or {"models": [...]} of entries whose fields get wrong types (ints, lists,
             dicts, null, floats, NaN, huge ints), NULs, newlines, huge strings, lone
             surrogates, paths with `..`, absolute paths (into the sandbox: `@ROOT@` in the
             text is the sandbox root's absolute path), the symlinked output folder, unknown
             keys; in YAML also anchors and aliases (nested ones: a billion laughs), a
             recursive alias, merge keys, tags (!!python/object, !!binary, !!set) and
             several documents; in JSON also deep nesting, BOMs and duplicate keys;
  mutated    a valid manifest's text with lines, tokens and characters deleted, repeated,
             swapped or replaced by the values above.

It runs what `tf2ir batch MANIFEST -o out -j 1 -q --timeout 0` runs (tools/batch.py `run`),
in the worker process: the models are converted one after another in process instead of
in batch's worker pool. Beyond tools/fuzz.py's outcomes:

  crash    also a model whose batch result is "internal error: ..." (batch catches it)
  escape   a job's output (or its sidecar) resolves outside -o (it is refused before
           anything is written), or any file outside out/ was created or changed
  invalid  also a model reported ok whose .onnx fails the ONNX checker
"""

from __future__ import annotations

import json
import os
import random
import stat
from typing import Dict, List, Tuple

from tf2ir.tools.fuzz_core import BatchInternalError, Escape, check_model_file

PREFIX = ".manifest/"
DEPTH = 8                               # the sandbox root is this many folders down
ROOT_REL = "/".join(["s"] * DEPTH) + "/root"
PLACEHOLDER = "@ROOT@"
SEED_MODELS = ("Relu", "AddV2")         # seed graphs of tools/fuzz_seeds.py that become a.pb, b.pb


def _key(path: str) -> str:
    return PREFIX + ROOT_REL + "/" + path


HUGE_DOTS = "/".join([".."] * (DEPTH - 1))
STRINGS = (
    "a.pb", "b.pb", "a.pb", "b.pb", "missing.pb", "fifo.pb", "zero.pb", "up.pb", "../in/a.pb",
    PLACEHOLDER + "/in/a.pb", "", ".", "..", "/", "a\x00.pb", "a.pb\n", " a.pb", "\u00fc.pb",
    "\ud800.pb", "a.pb\u2028", "x" * 5000, "\\..\\x.onnx", "%s%n", "{0}", "~/x.onnx", "-o",
    "--force", "a.pb/", "in", "out.onnx", "sub/x.onnx", "sub/../x.onnx", "../victim.onnx",
    "../outside/victim.txt", "../../outside/new.onnx", HUGE_DOTS + "/deep.onnx",
    PLACEHOLDER + "/outside/abs.onnx", PLACEHOLDER + "/out/abs.onnx", "escape/x.onnx",
    "escape/../x.onnx", "sub/../../x.onnx", "./x.onnx", "x.onnx\x00.txt", "a" * 300 + ".onnx",
    "x:1,2", "x:-1", "x:0", "x:99999999999,99999999999", "x_1:2,3", "y:0", "nonexistent:0",
    "off:all", "on:nothing", "off:", "on:gelu", "x:1,2,", ":", "x:1e9",
)
FIELDS = ("path", "inputs", "outputs", "fusion", "output")
GOOD_PATHS = ("a.pb", "b.pb", "up.pb", "../in/a.pb", PLACEHOLDER + "/in/b.pb", "./a.pb")
OUTPUTS = ("x.onnx", "sub/x.onnx", "sub/../y.onnx", "./z.onnx", "../victim.onnx",
           "../outside/victim.onnx", "../outside/victim.txt", "../../outside/new.onnx",
           "../out/ok.onnx", HUGE_DOTS + "/deep.onnx", PLACEHOLDER + "/outside/abs.onnx",
           PLACEHOLDER + "/out/abs.onnx", "escape/x.onnx", "escape/../x.onnx", "sub/../../x.onnx",
           "..", ".", "/", "escape", "sub/", "a" * 300 + ".onnx", "x.onnx\x00", "..\\x.onnx",
           "~/x.onnx", "$HOME/x.onnx", "x.onnx" + "/.." * 3, "sub/./../../outside/dot.onnx")


def _value(rng: random.Random, depth: int = 0):
    choice = rng.randrange(12)
    if choice <= 5:
        return rng.choice(STRINGS)
    if choice == 6:
        return rng.choice((0, -1, 1, 2 ** 63, 10 ** 40, -(2 ** 64), 7))
    if choice == 7:
        return rng.choice((1.5, 1e308, float("nan"), float("inf"), -0.0))
    if choice == 8:
        return rng.choice((None, True, False))
    if choice == 9 and depth < 3:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if choice == 10 and depth < 3:
        return {rng.choice(FIELDS + ("x", "")): _value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return rng.choice(STRINGS[:10])


def _entry(rng: random.Random):
    if rng.random() < 0.5:   # well formed but for where it reads and writes
        entry = {"path": rng.choice(GOOD_PATHS)}
        if rng.random() < 0.8:
            entry["output"] = rng.choice(OUTPUTS)
        return entry
    if rng.random() < 0.2:
        return _value(rng)
    entry = {"path": rng.choice(("a.pb", "b.pb")) if rng.random() < 0.6 else _value(rng)}
    for name in FIELDS[1:]:
        if rng.random() < 0.4:
            entry[name] = _value(rng)
    if rng.random() < 0.1:
        entry[rng.choice(("unknown", "path\x00", "Path", "output "))] = _value(rng)
    return entry


def _structure(rng: random.Random):
    entries = [_entry(rng) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    top = rng.randrange(10)
    if top < 6:
        return entries
    if top < 9:
        return {"models": entries}
    return rng.choice(({"models": {"path": "a.pb"}}, {"models": "a.pb"}, 5, None, "a.pb",
                       {"model": entries}, [[entries]]))


def _json_text(data, rng: random.Random) -> str:
    text = json.dumps(data, allow_nan=True, ensure_ascii=rng.random() < 0.5)
    extra = rng.randrange(12)
    if extra == 0:
        text = "\ufeff" + text
    elif extra == 1:
        depth = rng.choice((100, 5000, 200000))
        text = "[" * depth + "]" * depth
    elif extra == 2:
        text = text.replace('"path"', '"path": "a.pb", "path"', 1)
    return text


def _yaml_text(data, rng: random.Random) -> str:
    extra = rng.randrange(10)
    if extra == 0:   # nested aliases: a billion laughs in a few hundred bytes
        width, depth = rng.choice(((9, 9), (5, 12), (3, 4)))
        lines = [f'l0: &l0 ["lol"{", 0" * 0}]']
        for i in range(1, depth):
            lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
        field = rng.choice(FIELDS)
        lines.append(f"models:\n  - {{path: a.pb, {field}: *l{depth - 1}}}")
        return "\n".join(lines) + "\n"
    if extra == 1:
        return rng.choice(("models: &r [*r]\n", "&r [{path: a.pb, output: *r}]\n",
                           "- &e {path: a.pb, inputs: *e}\n"))
    if extra == 2:
        return rng.choice((
            f'- !!python/object/apply:os.system ["touch {PLACEHOLDER}/outside/pwned"]\n',
            "- {path: !!binary YS5wYg==}\n", "- {path: a.pb, output: !!set {a, b}}\n",
            "- {path: a.pb, output: 2001-12-14}\n", "- {path: a.pb, output: !!float .nan}\n",
            "- &b {path: a.pb}\n- {<<: *b, output: x.onnx}\n", "- a.pb\n---\n- b.pb\n",
            "- {path: a.pb, output: 0o777}\n", "- {path: a.pb, output: yes}\n",
            "- {path: a.pb, output: ~}\n", "- !!str a.pb\n", "- {? [a, b] : c}\n"))
    import yaml
    try:
        return yaml.safe_dump(data, allow_unicode=rng.random() < 0.5, default_flow_style=None)
    except yaml.YAMLError:
        return "- a.pb\n"


TEXT_PIECES = ("\x00", "\n", '"', "'", "[", "]", "{", "}", ":", ",", "&a", "*a", "!!", "..", "/",
               "\\", "\\u0000", "\\ud800", "-", "#", "%", "|", ">", "\t", "?", "@", "`", "'''")


def _mutate_text(text: str, rng: random.Random, ops: List[str]) -> str:
    for _ in range(rng.randrange(1, 4)):
        choice = rng.randrange(7)
        lines = text.split("\n")
        if choice == 0 and len(lines) > 1:
            del lines[rng.randrange(len(lines))]
            text = "\n".join(lines)
            ops.append("text:del-line")
        elif choice == 1:
            i = rng.randrange(len(lines))
            lines.insert(i, lines[rng.randrange(len(lines))])
            text = "\n".join(lines)
            ops.append("text:dup-line")
        elif choice == 2 and text:
            pos = rng.randrange(len(text))
            text = text[:pos] + text[pos + rng.randrange(1, 8):]
            ops.append("text:delete")
        elif choice == 3:
            pos = rng.randrange(len(text) + 1)
            text = text[:pos] + rng.choice(TEXT_PIECES) + text[pos:]
            ops.append("text:insert")
        elif choice == 4:
            pos = rng.randrange(len(text) + 1)
            value = json.dumps(rng.choice(STRINGS))
            text = text[:pos] + value + text[pos:]
            ops.append("text:string")
        elif choice == 5 and text:
            a, b = sorted(rng.randrange(len(text) + 1) for _ in range(2))
            text = text[:a] + text[a:b] * rng.choice((2, 3, 50)) + text[b:]
            ops.append("text:repeat")
        else:
            import re
            numbers = list(re.finditer(r"-?\d+", text))
            if numbers:
                m = rng.choice(numbers)
                text = text[:m.start()] + str(rng.choice((0, -1, 2 ** 63, 10 ** 30))) + text[m.end():]
                ops.append("text:number")
    return text


def make_manifest_case(corpus, rng: random.Random, ops: List[str]) -> Tuple[Dict[str, bytes], Dict[str, str], str]:
    """(files, special entries, origin) of one manifest case."""
    seeds = dict(corpus.graphs)
    files: Dict[str, bytes] = {}
    fmt = rng.choice(("json", "json", "yaml", "yaml", "yml", "txt"))
    data = _structure(rng)
    if fmt == "json" or fmt == "txt":
        text = _json_text(data, rng)
    else:
        text = _yaml_text(data, rng)
    origin = "generated"
    if rng.random() < 0.4:
        text = _mutate_text(text, rng, ops)
        origin = "mutated"
    ops.insert(0, f"{fmt}")
    manifest = _key(f"in/list.{fmt}")
    files[manifest] = text.encode("utf-8", "surrogatepass")
    for name, seed in zip(("a.pb", "b.pb"), SEED_MODELS):
        files[_key("in/" + name)] = seeds.get(seed) or corpus.graphs[0][1]
    files[_key("outside/victim.txt")] = b"victim\n"
    files[_key("outside/victim.onnx")] = b"not a model\n"
    files[_key("outside/secret.pb")] = corpus.graphs[0][1][:64]
    special = {_key("in/fifo.pb"): "fifo", _key("in/zero.pb"): "devzero",
               _key("in/up.pb"): "link:../outside/secret.pb", _key("out/escape"): "link:../outside"}
    return files, special, origin


# == running a case =========================================================================
def materialize(base: str, files: Dict[str, bytes], special: Dict[str, str]) -> Tuple[str, str, str]:
    """Write the sandbox under `base`; (sandbox, root, manifest path)."""
    sandbox = base + PREFIX.rstrip("/")
    root = os.path.join(sandbox, ROOT_REL)
    manifest = None
    for key, data in files.items():
        full = base + key
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if manifest is None:   # the first file is the manifest
            manifest = full
            data = data.replace(PLACEHOLDER.encode(), root.encode())
        with open(full, "wb") as f:
            f.write(data)
    os.makedirs(os.path.join(root, "out"), exist_ok=True)
    for key, what in special.items():
        full = base + key
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if what == "fifo":
            os.mkfifo(full)
        elif what == "devzero":
            os.symlink("/dev/zero", full)
        elif what.startswith("link:"):
            os.symlink(what[5:], full)
    return sandbox, root, manifest


def _snapshot(sandbox: str, out: str) -> Dict[str, Tuple]:
    seen = {}
    for dirpath, dirnames, names in os.walk(sandbox):
        if os.path.abspath(dirpath) == out:
            dirnames[:] = []
            continue
        for n in names + dirnames:
            path = os.path.join(dirpath, n)
            if os.path.abspath(path) == out:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            seen[os.path.relpath(path, sandbox)] = (stat.S_IFMT(st.st_mode), st.st_size,
                                                    st.st_mtime_ns, st.st_ino)
    return seen


def _inside(path: str, folder: str) -> bool:
    try:
        real = os.path.realpath(path)
    except (ValueError, UnicodeError):   # a NUL or a lone surrogate: nothing can be written there
        return True
    return real == folder or real.startswith(folder + os.sep)


def execute_manifest(case, ctx) -> None:
    from tf2ir.tools import batch
    from tf2ir.tools.cli import build_parser
    base = os.path.join(ctx.workdir, "case")
    sandbox, root, manifest = materialize(base, case.files, case.special)
    out = os.path.realpath(os.path.join(root, "out"))
    before = _snapshot(sandbox, out)
    results: List = []

    def inline(jobs, workers, plugin_dirs=(), force=False, on_done=lambda r: None,
               timeout=None, verify=False):
        for job in jobs:   # the pool's work, here: refuse what would leave -o before it is written
            for path in (job.output, job.output + batch.SIDECAR_SUFFIX):
                if not _inside(path, out):
                    raise Escape(f"batch would write outside -o, into {_where(path, sandbox, root)}")
        done = []
        for job in jobs:
            ctx.stage(1)
            result = batch.convert_one(job, tuple(plugin_dirs), force, verify)
            done.append(result)
            on_done(result)
        results.extend(done)
        return done

    args = build_parser().parse_args(["batch", manifest, "-o", os.path.join(root, "out"), "-j", "1",
                                      "-q", "--timeout", "0"])
    saved = batch.convert_all
    batch.convert_all = inline
    try:
        batch.run(args)
    finally:
        batch.convert_all = saved
    ctx.stage(3)
    after = _snapshot(sandbox, out)
    changed = sorted(k for k, v in after.items() if before.get(k) != v)
    if changed:
        raise Escape("files outside -o created or changed: "
                     + ", ".join(f"/{c}" for c in changed[:3]))
    for r in results:
        if r.message.startswith("internal error"):
            raise BatchInternalError(r.message)
        if r.status == "ok":
            check_model_file(r.output)


def _where(path: str, sandbox: str, root: str) -> str:
    """Where a path leads, for the message: `outside/…`, `root/…` or `sandbox/…` (the folders
    a case has) and the rest as a path, which the grouping blanks."""
    real = os.path.realpath(path)
    if real.startswith(root + os.sep):
        rel = os.path.relpath(real, root)
        top = rel.split(os.sep)[0] if os.sep in rel else "root"
        return f"{top}/ (/{rel})"
    if real.startswith(sandbox + os.sep):
        return f"above the sandbox root (/{os.path.relpath(real, sandbox)})"
    return f"outside the sandbox ({real})"
