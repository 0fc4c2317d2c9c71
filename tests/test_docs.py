"""Every example of README.md and docs/*.md runs, as written, and every relative link resolves.

The fenced blocks of each page are run in order in a working directory of the page's own,
which holds what the examples name (built once per session, with TensorFlow):

    model.pb, model.pbtxt   a small frozen CNN: input `input` [?, 224, 224, 3], outputs
                            `logits` (Identity) and `probs` (Softmax, 10 classes)
    inputs.npz              {"input": two images} for model.pb
    saved_model_dir/        a SavedModel, signatures `serving_default` (x -> y) and `add` (a, b)
    model.keras             a Keras Sequential (input `features`, 8 wide)
    xlog1py.pb              z = xlog1py(x, y) * 2 (the op docs/plugins.md's first plugin maps)
    models/, models.json    four frozen models and a manifest listing them, for `tf2ir batch`
    tests/data              the repository's (sample_cnn.pb)

- ```sh blocks run as one bash script each (`set -euo pipefail`), so every command must exit
  0 (a command shown failing is written `... || echo "exit status $?"`), and every file a
  command names with `-o` must exist afterwards (but on such a failing line);
- ```python blocks run as scripts in the same directory (consecutive ones one after another in
  one interpreter, each with a namespace of its own);
- ```text blocks (output samples, file layouts, commands too long to run here) are not run;
  a fence with no language, or another one, fails `test_every_fence_is_labelled`.

HTML comments just before a fence (invisible on the rendered page) adjust how it is run:

    <!-- test-replace: OLD => NEW -->  run the block with OLD replaced by NEW (a reduced
                                         argument: a long benchmark on a small graph)
    <!-- test-skip-line: TEXT -->      leave out the lines that contain TEXT
    <!-- test-slow: REASON -->         run the block in test_slow_example (marked slow), on a
                                         copy of the models of its own: it must stand alone
    <!-- test-skip: REASON -->         do not run the block (README's `python -m pytest`, which
                                         is this test suite; .ci/run runs it)
    <!-- file: PATH -->                write the block to PATH in the working directory instead
                                         of running it (a plugin file the next commands load)
    <!-- example: NAME -->, <!-- kernel-example: NAME -->
                                       a plugin file that tests/plugins/test_docs_examples.py or
                                         test_kernels.py run against TensorFlow
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
LANGUAGES = ("sh", "python", "text")
FENCE = re.compile(r"((?:^<!--[^\n]*-->\n)*)^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*([\w-]+):\s*(.*?)\s*-->")
RUN_ELSEWHERE = ("example", "kernel-example")
BLOCK_TIMEOUT = 300


@dataclass
class Block:
    page: str
    line: int
    language: str
    code: str
    directives: List[Tuple[str, str]] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def get(self, name: str) -> Optional[str]:
        return next((value for key, value in self.directives if key == name), None)

    def runnable(self) -> bool:
        names = {key for key, _ in self.directives}
        return (self.language in ("sh", "python") and "test-skip" not in names
                and not names & set(RUN_ELSEWHERE))

    def slow(self) -> bool:
        return self.get("test-slow") is not None

    def script(self) -> str:
        code = self.code
        for key, value in self.directives:
            if key == "test-replace":
                old, _, new = value.partition("=>")
                assert old.strip() and old.strip() in code, f"{self.where()}: {old.strip()!r} not in the block"
                code = code.replace(old.strip(), new.strip())
            elif key == "test-skip-line":
                assert value in code, f"{self.where()}: no line holds {value!r}"
                code = "".join(line for line in code.splitlines(True) if value not in line)
        return code


def blocks(page: str) -> List[Block]:
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start(2)) + 1
        directives = DIRECTIVE.findall(match.group(1))
        found.append(Block(page, line, match.group(2).strip(), match.group(3), directives))
    return found


# --- the working directory ------------------------------------------------------------------

def _build_models(folder: str) -> None:
    import tensorflow as tf
    from google.protobuf import text_format
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 224, 224, 3], name="input")
        w = tf.constant(rng.normal(0, 0.3, (3, 3, 3, 8)).astype(np.float32))
        b = tf.constant(rng.normal(0, 0.1, 8).astype(np.float32))
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 4, "SAME"), b))
        h = tf.reduce_mean(h, [1, 2])
        dense = tf.constant(rng.normal(0, 0.5, (8, 10)).astype(np.float32))
        logits = tf.identity(tf.matmul(h, dense) + 0.1, name="logits")
        tf.nn.softmax(logits, name="probs")
    graph_def = graph.as_graph_def()
    with open(os.path.join(folder, "model.pb"), "wb") as f:
        f.write(graph_def.SerializeToString())
    with open(os.path.join(folder, "model.pbtxt"), "w") as f:
        f.write(text_format.MessageToString(graph_def))
    np.savez(os.path.join(folder, "inputs.npz"),
             input=rng.uniform(0, 1, (2, 224, 224, 3)).astype(np.float32))

    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        c = tf.compat.v1.placeholder(tf.float32, [None, 3], name="y")
        tf.identity(tf.math.xlog1py(a, c) * 2.0, name="z")
    with open(os.path.join(folder, "xlog1py.pb"), "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())

    module = tf.Module()
    module.w = tf.Variable(rng.normal(size=(4, 2)).astype(np.float32))
    serve = tf.function(lambda x: {"y": tf.nn.relu(tf.matmul(x, module.w))},
                        input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    add = tf.function(lambda a, b: {"sum": a + b},
                      input_signature=[tf.TensorSpec([None, 3], tf.float32, name="a"),
                                       tf.TensorSpec([None, 3], tf.float32, name="b")])
    tf.saved_model.save(module, os.path.join(folder, "saved_model_dir"),
                        signatures={"serving_default": serve.get_concrete_function(),
                                    "add": add.get_concrete_function()})

    import keras
    model = keras.Sequential([keras.Input((8,), name="features"),
                              keras.layers.Dense(4, activation="relu", name="dense")])
    model.save(os.path.join(folder, "model.keras"))
    # model.tflite: the SavedModel's serving function through TF's TFLite converter
    converter = tf.lite.TFLiteConverter.from_concrete_functions([serve.get_concrete_function()],
                                                                module)
    with open(os.path.join(folder, "model.tflite"), "wb") as f:
        f.write(converter.convert())
    # model_dynamic.tflite: dynamic-range int8 weights (over the converter's 1,024 values)
    hybrid = tf.Module()
    hybrid.w = tf.Variable(rng.normal(size=(64, 32)).astype(np.float32))
    relu = tf.function(lambda x: tf.nn.relu(tf.matmul(x, hybrid.w)),
                       input_signature=[tf.TensorSpec([None, 64], tf.float32, name="x")])
    converter = tf.lite.TFLiteConverter.from_concrete_functions([relu.get_concrete_function()],
                                                                hybrid)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    with open(os.path.join(folder, "model_dynamic.tflite"), "wb") as f:
        f.write(converter.convert())

    models = os.path.join(folder, "models")
    os.mkdir(models)
    names = ["a", "b", "c", "d"]
    for name in names:
        shutil.copy(os.path.join(folder, "model.pb"), os.path.join(models, f"{name}.pb"))
    with open(os.path.join(folder, "models.json"), "w") as f:
        f.write("[" + ", ".join(f'{{"path": "models/{n}.pb", "inputs": ["input:1,224,224,3"], '
                                f'"outputs": ["logits"], "output": "{n}.onnx"}}' for n in names) + "]\n")
    os.symlink(os.path.join(ROOT, "tests"), os.path.join(folder, "tests"))   # tests/data/sample_cnn.pb


@pytest.fixture(scope="session")
def docs_models(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("docs-models"))
    _build_models(folder)
    return folder


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.pop("TF2IR_PLUGIN_PATH", None)
    return env


def _outputs_named(script: str) -> List[str]:
    """The paths the commands of a shell block write with -o."""
    return [m.group(1) for line in script.splitlines()
            if not line.lstrip().startswith("#") and "||" not in line   # || : shown failing
            for m in re.finditer(r"(?:^|\s)-o\s+([^\s;|&#]+)", line.split("  #")[0])]


_PYTHON_DRIVER = """
import sys
for path in sys.argv[1:]:
    print("### " + path, flush=True)
    exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__", "__file__": path})
"""


def _run(group: List[Block], cwd: str) -> None:
    """One shell block, or consecutive python blocks run one after another in one interpreter
    (each in a namespace of its own: TensorFlow is imported once, not once per block)."""
    if group[0].language == "sh":
        code = group[0].script()
        command = ["bash", "-c", "set -euo pipefail\n" + code]
    else:
        paths = []
        for block in group:
            paths.append(os.path.join(cwd, f"_docs_{os.path.basename(block.page)}_{block.line}.py"))
            with open(paths[-1], "w") as f:
                f.write(block.script())
        code = "\n".join(block.script() for block in group)
        command = [sys.executable, "-c", _PYTHON_DRIVER, *paths]
    start = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=_env(), capture_output=True, text=True,
                            timeout=BLOCK_TIMEOUT * len(group))
    where = ", ".join(block.where() for block in group)
    print(f"{where}: {time.monotonic() - start:.1f} s")   # shown with -s: which examples cost
    assert result.returncode == 0, (
        f"{where} ({group[0].language}) exited {result.returncode}:\n{code}\n"
        f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}")
    if group[0].language == "sh":
        missing = [p for p in _outputs_named(code) if not os.path.exists(os.path.join(cwd, p))]
        assert not missing, f"{where}: no {missing} after\n{code}"


def _runnable_pages() -> List[str]:
    return [page for page in PAGES if any(b.runnable() and not b.slow() for b in blocks(page))]


def _slow_blocks() -> List[Block]:
    return [b for page in PAGES for b in blocks(page) if b.runnable() and b.slow()]


def _copy_models(models: str, tmp_path) -> str:
    cwd = str(tmp_path / "work")
    shutil.copytree(models, cwd, symlinks=True)
    return cwd


@pytest.mark.parametrize("page", _runnable_pages())
def test_page_examples_run(page, docs_models, tmp_path):
    """Each page's examples, in order, in a copy of the models (so one page's outputs never
    feed another's)."""
    cwd = _copy_models(docs_models, tmp_path)
    ran = 0
    group: List[Block] = []
    for block in blocks(page) + [Block(page, 0, "end", "")]:
        if group and not (block.language == "python" == group[0].language and block.runnable()):
            _run(group, cwd)
            ran += len(group)
            group = []
        target = block.get("file")
        if target is not None:
            os.makedirs(os.path.dirname(os.path.join(cwd, target)) or cwd, exist_ok=True)
            with open(os.path.join(cwd, target), "w") as f:
                f.write(block.code)
        elif block.runnable() and not block.slow():
            group.append(block)
    assert ran


if _slow_blocks():   # none today: defined only when a page marks a block
    @pytest.mark.slow
    @pytest.mark.parametrize("block", _slow_blocks(), ids=Block.where)
    def test_slow_example(block, docs_models, tmp_path):
        """The examples that take long, each alone."""
        _run([block], _copy_models(docs_models, tmp_path))


# --- the pages' form ------------------------------------------------------------------------

def test_every_fence_is_labelled():
    """A block is run (sh, python) or shown (text): no fence is silently left out."""
    bad = [b.where() for page in PAGES for b in blocks(page) if b.language not in LANGUAGES]
    assert not bad, f"fences without sh/python/text: {bad}"
    for page in PAGES:
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        opened = len(re.findall(r"^```", text, re.M))
        assert opened == 2 * len(blocks(page)), f"{page}: a fence the harness does not read"


def test_directives_are_known():
    known = {"test-replace", "test-skip-line", "test-skip", "test-slow", "file"} | set(RUN_ELSEWHERE)
    for page in PAGES:
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        for name, _ in DIRECTIVE.findall(text):
            assert name in known, f"{page}: unknown directive {name!r}"


def test_readme_is_short_and_keeps_the_set_up_commands():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert len(text.splitlines()) <= 150
    # .ci/run runs the second; users copy the first.
    assert "```sh\npip install . && tf2ir convert tests/data/sample_cnn.pb -o sample_cnn.onnx -v\n```" in text
    assert "```sh\npip install -e \".[test]\" && python -m pytest -q\n```" in text
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert 'pip install -e ".[test]" && python -m pytest -q' in ci
    for page in PAGES[1:]:
        assert f"]({page})" in text, f"README does not link {page}"


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"`|\*\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str) -> set:
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)   # no headings inside code
    seen: Dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def test_slug_is_githubs():
    assert slug("report: the conversion report") == "report-the-conversion-report"
    assert slug("`batch` workers never outlive it") == "batch-workers-never-outlive-it"
    assert slug("6. Many-to-one: scope fusion") == "6-many-to-one-scope-fusion"


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    path = os.path.join(ROOT, page)
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue   # https:, mailto:
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(resolved):
            broken.append(target)
        elif anchor and (not resolved.endswith(".md") or anchor not in anchors(resolved)):
            broken.append(target)
    assert not broken, f"{page}: links that do not resolve: {broken}"
