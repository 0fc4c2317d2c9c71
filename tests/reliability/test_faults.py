"""Fault scenarios (issue 10, DESIGN decision 10): whatever the output path, signal, plugin or
input file, tf2ir never destroys a file, never leaves a temporary behind, never hangs and
prints one line. Each test runs the real command line in a fresh process and checks the
end state: files present or absent and their bytes, the exit status, the one stderr line.

The signal-during-the-write tests make the moment deterministic without any test hook in
the product: a generated GraphDef with one 100 MB constant takes a while to write, and the
signal is sent as soon as the writer's temporary file (`.OUT.XXXX.tmp` beside the target)
exists, i.e. after the write has started and before the rename.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

TINY = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } } }
node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""
SIGNALS = [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)]


# -- helpers -----------------------------------------------------------------------------
def tf2ir_command(*args):
    return [sys.executable, "-m", "tf2ir.tools.cli", *map(str, args)]


def tf2ir(*args, timeout=120, cwd=None):
    return subprocess.run(tf2ir_command(*args), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr, stderr
    return lines[0]


def assert_error(result, code, *needles):
    assert result.returncode == code, (result.returncode, result.stderr)
    line = one_line(result.stderr)
    assert line.startswith("tf2ir: error: "), line
    for needle in needles:
        assert needle in line, line
    return line


def temporaries(directory) -> list:
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp"))


def fingerprint(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.pbtxt"
    path.write_text(TINY)
    return path


@pytest.fixture
def ir_file(tiny, tmp_path):
    out = tmp_path / "m.ir"
    result = tf2ir("convert", tiny, "--emit", "ir", "-o", out)
    assert result.returncode == 0, result.stderr
    return out


def write_graph_def(path, elements: int) -> None:
    """x + c, c a float32 constant of `elements` elements, built without TensorFlow."""
    import numpy as np
    from tensorboard.compat.proto import graph_pb2, types_pb2

    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    x.attr["shape"].shape.dim.add(size=elements)
    c = graph.node.add(name="c", op="Const")
    c.attr["dtype"].type = types_pb2.DT_FLOAT
    tensor = c.attr["value"].tensor
    tensor.dtype = types_pb2.DT_FLOAT
    tensor.tensor_shape.dim.add(size=elements)
    tensor.tensor_content = np.ones(elements, np.float32).tobytes()
    y = graph.node.add(name="y", op="AddV2", input=["x", "c"])
    y.attr["T"].type = types_pb2.DT_FLOAT
    with open(path, "wb") as f:
        f.write(graph.SerializeToString())


@pytest.fixture(scope="module")
def big_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.pb"
    write_graph_def(path, 25_000_000)          # 100 MB: the write takes a moment
    return path


@pytest.fixture(scope="module")
def mid_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("mid") / "mid.pb"
    write_graph_def(path, 10_000_000)          # 40 MB: four writes of it overlap
    return path


def plugin_dir(tmp_path, source: str, name: str = "faulty.py"):
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(source)
    return folder


def relu6_plugin(body: str) -> str:
    """A plugin that maps TF Relu6 (priority over the built-in) with `body` as its parse fn."""
    return f"""import os, sys, time
from tf2ir.plugins import hookimpl, register_op

def parse(src, op):
{body}

@hookimpl
def tf2ir_op_mappings():
    return [register_op("Relu6").framework_type("TENSORFLOW").origin_op_type("Relu6")
            .parse_params_fn(parse).with_priority(100)]
"""


# -- 1. data loss: outputs that are inputs, devices, directories --------------------------
def test_convert_refuses_its_input_as_output(tiny):
    before = fingerprint(tiny)
    assert_error(tf2ir("convert", tiny, "-o", tiny), 2, "is the input", str(tiny))
    assert fingerprint(tiny) == before


def test_convert_refuses_a_link_to_its_input(tiny, tmp_path):
    link = tmp_path / "link.onnx"
    link.symlink_to(tiny)
    before = fingerprint(tiny)
    assert_error(tf2ir("convert", tiny, "-o", link), 2, "is the input")
    assert fingerprint(tiny) == before and link.is_symlink()


def test_emit_ir_refuses_its_input_as_the_ir_or_the_weights(tiny, tmp_path):
    before = fingerprint(tiny)
    assert_error(tf2ir("convert", tiny, "--emit", "ir", "-o", tiny), 2, "is the input")
    # -o X writes X and X.weights: an input named X.weights is refused too
    model = tmp_path / "m.ir.weights"
    shutil.copy(tiny, model)
    assert_error(tf2ir("convert", model, "--emit", "ir", "-o", tmp_path / "m.ir"), 2,
                 "m.ir.weights is the input")
    assert fingerprint(tiny) == before and fingerprint(model) == before
    assert not (tmp_path / "m.ir").exists()


@pytest.mark.parametrize("target", ["m.ir", "m.ir.weights"])
def test_compile_refuses_the_ir_or_its_weights_as_output(ir_file, target):
    files = [ir_file, ir_file.parent / "m.ir.weights"]
    before = [fingerprint(f) for f in files]
    assert_error(tf2ir("compile", ir_file, "-o", ir_file.parent / target), 2, "is the input")
    assert [fingerprint(f) for f in files] == before
    assert temporaries(ir_file.parent) == []


def test_verify_refuses_its_input_as_the_onnx_file(tiny):
    before = fingerprint(tiny)
    assert_error(tf2ir("verify", tiny, "--onnx", tiny), 2, "is the input")
    assert fingerprint(tiny) == before


def test_batch_manifest_output_naming_an_input_is_refused(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.pbtxt").write_text(TINY)
    (models / "b.pbtxt").write_text(TINY.replace('"y"', '"z"'))
    before = fingerprint(models / "b.pbtxt")
    manifest = models / "manifest.json"
    manifest.write_text(json.dumps([{"path": "a.pbtxt", "output": "../models/b.pbtxt"},
                                    "b.pbtxt"]))
    out = tmp_path / "out"
    assert_error(tf2ir("batch", manifest, "-o", out), 2, "is the input", "b.pbtxt")
    assert fingerprint(models / "b.pbtxt") == before
    assert not out.exists()                           # refused before any work
    # --report naming the manifest is refused the same way
    manifest.write_text(json.dumps(["a.pbtxt"]))
    manifest_bytes = fingerprint(manifest)
    assert_error(tf2ir("batch", manifest, "-o", out, "--report", manifest), 2, "is the input")
    assert fingerprint(manifest) == manifest_bytes


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_fifo_as_output_is_refused(tiny, tmp_path):
    fifo = tmp_path / "o.onnx"
    os.mkfifo(fifo)
    assert_error(tf2ir("convert", tiny, "-o", fifo, timeout=30), 2, "not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/full") or not hasattr(os, "mkfifo"),
                    reason="no /dev/full")
def test_dev_full_is_refused_and_stays_a_device(tiny, tmp_path):
    # A regression would replace the machine's /dev/full by a regular file (as the code
    # before this test did): try a harmless non-regular output first, and stop if it is
    # not refused.
    fifo = tmp_path / "o.onnx"
    os.mkfifo(fifo)
    assert tf2ir("convert", tiny, "-o", fifo, timeout=30).returncode == 2, \
        "non-regular outputs are not refused: not trying /dev/full"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    assert_error(tf2ir("convert", tiny, "-o", "/dev/full"), 2, "/dev/full",
                 "not a regular file")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_directory_as_output_is_refused(tiny, tmp_path):
    target = tmp_path / "out.onnx"
    target.mkdir()
    assert_error(tf2ir("convert", tiny, "-o", target), 2, "is a directory")
    assert target.is_dir() and os.listdir(target) == []


def test_a_missing_output_directory_is_a_usage_error(tiny, tmp_path):
    assert_error(tf2ir("convert", tiny, "-o", tmp_path / "nowhere" / "o.onnx"), 2,
                 "does not exist")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_output_directory_is_refused(tiny, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert_error(tf2ir("convert", tiny, "-o", folder / "o.onnx"), 2, "not writable")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o755)


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="no sysfs")
def test_an_unwritable_directory_fails_in_one_line(tiny):
    """Root writes anywhere permissions allow; sysfs refuses new files even to root (and for
    others the directory is refused before any work)."""
    result = tf2ir("convert", tiny, "-o", "/sys/kernel/tf2ir_test.onnx")
    assert result.returncode in (1, 2), result.stderr
    assert "/sys/kernel/tf2ir_test.onnx" in one_line(result.stderr)
    assert not os.path.exists("/sys/kernel/tf2ir_test.onnx")


def test_a_failed_run_leaves_other_temporaries_alone(tiny, tmp_path):
    """The old fixed temporary name OUT.tmp belonged to whichever run wrote it: a failing run
    must not remove another writer's file."""
    out = tmp_path / "o.onnx"
    theirs = tmp_path / "o.onnx.tmp"
    theirs.write_bytes(b"another writer's")
    bad = tmp_path / "bad.pbtxt"
    bad.write_text("not a graph")
    assert_error(tf2ir("convert", bad, "-o", out), 1)
    assert fingerprint(theirs) == b"another writer's" and not out.exists()


# -- 2. concurrent writers ---------------------------------------------------------------
def test_four_concurrent_converts_to_one_path(mid_model, tmp_path):
    """Each writer has its own temporary (with one fixed name OUT.tmp, two of the four
    failed: one renamed the other's file away)."""
    import onnx

    out = tmp_path / "out.onnx"
    procs = [subprocess.Popen(tf2ir_command("convert", mid_model, "-o", out),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [code for code, _ in results] == [0, 0, 0, 0], results
    onnx.checker.check_model(str(out), full_check=True)
    assert sorted(os.listdir(tmp_path)) == ["out.onnx"]


# -- 3. signals --------------------------------------------------------------------------
def _wait_for_temporary(proc, directory, deadline_s=60.0) -> bool:
    end = time.monotonic() + deadline_s
    while proc.poll() is None and time.monotonic() < end:
        if temporaries(directory):
            return True
        time.sleep(0.001)
    return False


@pytest.mark.parametrize("name, code", SIGNALS)
def test_a_signal_during_the_write(big_model, tmp_path, name, code):
    out = tmp_path / "big.onnx"
    for _ in range(3):   # again only if this process was too slow to signal before the rename
        out.write_bytes(b"the previous output")
        proc = subprocess.Popen(tf2ir_command("convert", big_model, "-o", out),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert _wait_for_temporary(proc, tmp_path), "the write never started"
            proc.send_signal(getattr(signal, name))
            _, stderr = proc.communicate(timeout=60)
        finally:
            proc.kill()
            proc.wait()
        if proc.returncode != 0:
            break
    assert proc.returncode == code, stderr
    assert one_line(stderr) == f"tf2ir: interrupted by {name}"
    assert sorted(os.listdir(tmp_path)) == ["big.onnx"]          # no temporary left
    assert fingerprint(out) == b"the previous output"             # the old file untouched


def _catches(pid: int, signum: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except OSError:
        pass
    return False


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.parametrize("name, code", SIGNALS)
@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_a_signal_during_start_up(tiny, tmp_path, name, code, delay):
    """The handlers are in place before the heavy imports (numpy, onnx, protobuf, the
    plugins): the signal is sent as soon as the process catches SIGTERM, while it imports."""
    proc = subprocess.Popen(tf2ir_command("convert", tiny, "-o", tmp_path / "o.onnx"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 30
        while not _catches(proc.pid, signal.SIGTERM) and time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.0005)
        time.sleep(delay)
        proc.send_signal(getattr(signal, name))
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == code, stderr
    assert one_line(stderr) == f"tf2ir: interrupted by {name}"
    assert not (tmp_path / "o.onnx").exists() and temporaries(tmp_path) == []


SWALLOWED = """
import os, signal, sys, time
from tf2ir.tools import signals
signals.FORCE_AFTER_S = 1.0
signals.install()

class SendsOnCollect:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGTERM)   # the handler raises here, where Python drops it

SendsOnCollect()
assert signals.received() is not None
if sys.argv[1] == "returns":
    from tf2ir.tools.cli import main
    sys.exit(main(["plugins", "--json"]))   # completes; main reports the signal at the end
time.sleep(60)                              # stuck: the watchdog ends the run
"""


@pytest.mark.parametrize("how", ["returns", "stuck"])
def test_a_signal_raised_inside_a_destructor_still_ends_the_run(how):
    """Python cannot propagate an exception out of __del__: no 'Exception ignored'
    traceback, and the run ends with the signal's status all the same."""
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-c", SWALLOWED, how], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 143, result.stderr
    assert one_line(result.stderr) == "tf2ir: interrupted by SIGTERM"
    assert time.monotonic() - start < 30


def _alive(pid: int) -> bool:
    """Running (a zombie that nobody reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _descendants(pid: int) -> list:
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children = [int(c) for c in f.read().split()]
                found += children
                stack += children
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc")
@pytest.mark.parametrize("name", ["SIGTERM", "SIGKILL"])
def test_batch_workers_die_with_their_parent(tmp_path, name):
    """Two workers hang in a plugin (each records its pid); the parent is killed; the
    workers are gone within seconds (SIGTERM: the parent stops them; SIGKILL: they notice)."""
    marker = tmp_path / "started"
    marker.mkdir()
    plugins = plugin_dir(tmp_path, relu6_plugin(
        f"    open(os.path.join({str(marker)!r}, str(os.getpid())), 'w').close()\n"
        "    time.sleep(300)"))
    models = tmp_path / "models"
    models.mkdir()
    for name_ in ("a", "b"):
        (models / f"{name_}.pbtxt").write_text(TINY.replace('"Relu"', '"Relu6"'))
    out = tmp_path / "out"
    proc = subprocess.Popen(tf2ir_command("batch", models, "-o", out, "-j", "2",
                                          "--plugin-dir", plugins),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while len(os.listdir(marker)) < 2 and time.monotonic() < end:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        workers = [int(p) for p in os.listdir(marker)]
        assert len(workers) == 2
        assert set(workers) <= set(_descendants(proc.pid))
        proc.send_signal(getattr(signal, name))
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    end = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < end:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers), "a worker outlived its parent"
    if name == "SIGTERM":
        assert proc.returncode == 143
        assert one_line(stderr) == "tf2ir: interrupted by SIGTERM"
    assert not out.exists() or temporaries(out) == []


# -- 9. plugins --------------------------------------------------------------------------
def test_batch_timeout_stops_a_looping_plugin_and_the_others_go_on(tmp_path):
    plugins = plugin_dir(tmp_path, relu6_plugin("    while True:\n        pass"))
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.pbtxt").write_text(TINY)
    (models / "loop.pbtxt").write_text(TINY.replace('"Relu"', '"Relu6"'))
    (models / "z.pbtxt").write_text(TINY)
    report = tmp_path / "report.json"
    start = time.monotonic()
    result = tf2ir("batch", models, "-o", tmp_path / "out", "-j", "2", "-q", "--timeout", "5",
                   "--plugin-dir", plugins, "--report", report)
    assert time.monotonic() - start < 60
    assert result.returncode == 1, result.stderr
    with open(report) as f:
        statuses = {m["name"]: (m["status"], m["message"]) for m in json.load(f)["models"]}
    assert statuses["a.pbtxt"] == ("ok", "") and statuses["z.pbtxt"] == ("ok", "")
    assert statuses["loop.pbtxt"][0] == "failed" and "timed out after 5 s" in statuses["loop.pbtxt"][1]
    assert sorted(os.listdir(tmp_path / "out")) == ["a.onnx", "a.onnx.tf2ir.json",
                                                    "z.onnx", "z.onnx.tf2ir.json"]
    assert one_line(result.stderr).startswith("tf2ir: error: loop.pbtxt: timed out")


EXITING = {
    "parse-exit-0": relu6_plugin("    sys.exit(0)"),
    "parse-exit-3": relu6_plugin("    sys.exit(3)"),
    "parse-keyboard-interrupt": relu6_plugin("    raise KeyboardInterrupt"),
    "hook-exit-0": """import sys
from tf2ir.plugins import hookimpl

@hookimpl
def tf2ir_op_mappings():
    sys.exit(0)
""",
    "import-exit-3": "import sys\nsys.exit(3)\n",
    "fusion-result-exit-3": """import sys
from tf2ir.plugins import ScopePattern, hookimpl, scope_fusion_pass

fusion = scope_fusion_pass("exiting").pattern(ScopePattern(scope=r"(^|/)fz$",
                                                           op_types={"Relu6": 1}))

@fusion
def result(match):
    sys.exit(3)

@hookimpl
def tf2ir_fusion_passes():
    return [fusion]
""",
    "lowering-exit-0": """import sys
from tf2ir.ir import op_prototype
from tf2ir.opp.shapes import same_as_input
from tf2ir.plugins import auto_mapping, hookimpl, register_op

proto = op_prototype("ExitingRelu6", "exits while lowered").input("x", ["float32"]).output("y")
proto.infer(same_as_input)

@proto.lower
def lower(ctx, node):
    sys.exit(0)

@hookimpl
def tf2ir_op_prototypes():
    return [proto]

@hookimpl
def tf2ir_op_mappings():
    return [register_op("ExitingRelu6").framework_type("TENSORFLOW").origin_op_type("Relu6")
            .parse_params_fn(auto_mapping).with_priority(100)]
""",
}


@pytest.mark.parametrize("case", sorted(EXITING))
def test_a_plugin_that_exits_is_a_plugin_failure(tmp_path, case):
    plugins = plugin_dir(tmp_path, EXITING[case])
    model = tmp_path / "relu6.pbtxt"
    model.write_text(TINY.replace('name: "y" op: "Relu"', 'name: "fz/y" op: "Relu6"'))
    out = tmp_path / "o.onnx"
    line = assert_error(tf2ir("convert", model, "-o", out, "--plugin-dir", plugins), 1,
                        str(plugins / "faulty.py"))
    assert ("sys.exit(" in line) != ("KeyboardInterrupt" in line)
    assert not out.exists() and temporaries(tmp_path) == []


def test_a_plugin_that_exits_fails_alone_in_batch(tmp_path):
    plugins = plugin_dir(tmp_path, relu6_plugin("    sys.exit(0)"))
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.pbtxt").write_text(TINY)
    (models / "exits.pbtxt").write_text(TINY.replace('"Relu"', '"Relu6"'))
    report = tmp_path / "report.json"
    result = tf2ir("batch", models, "-o", tmp_path / "out", "-q", "-j", "1",
                   "--plugin-dir", plugins, "--report", report)
    assert result.returncode == 1, result.stderr
    with open(report) as f:
        statuses = {m["name"]: (m["status"], m["message"]) for m in json.load(f)["models"]}
    assert statuses["a.pbtxt"] == ("ok", "")
    assert statuses["exits.pbtxt"][0] == "failed" and "sys.exit(0)" in statuses["exits.pbtxt"][1]


# -- 5. input files that are not regular files ------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("suffix", [".pb", ".pbtxt", ".ir"])
def test_a_fifo_as_input_is_refused_at_once(tmp_path, suffix):
    fifo = tmp_path / f"model{suffix}"
    os.mkfifo(fifo)
    command = "compile" if suffix == ".ir" else "convert"
    result = tf2ir(command, fifo, "-o", tmp_path / "o.onnx", timeout=30)
    assert_error(result, 1, "not a regular file", str(fifo))
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_as_input_is_refused_at_once(tmp_path):
    assert_error(tf2ir("convert", "/dev/zero", "-o", tmp_path / "o.onnx", timeout=30), 1,
                 "not a regular file", "/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_batch_refuses_a_fifo_model_and_converts_the_others(tmp_path):
    os.mkfifo(tmp_path / "fifo.pb")
    (tmp_path / "a.pbtxt").write_text(TINY)
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps(["fifo.pb", "a.pbtxt"]))
    report = tmp_path / "r.json"
    result = tf2ir("batch", manifest, "-o", tmp_path / "out", "-q", "--report", report,
                   timeout=60)
    assert result.returncode == 1, result.stderr
    with open(report) as f:
        statuses = {m["name"]: (m["status"], m["message"]) for m in json.load(f)["models"]}
    assert statuses["a.pbtxt"] == ("ok", "")
    assert "not a regular file" in statuses["fifo.pb"][1]


# -- 8. error text -----------------------------------------------------------------------
def test_a_newline_in_names_does_not_split_the_error(tmp_path):
    model = tmp_path / "names.pbtxt"
    model.write_text(TINY.replace('name: "y" op: "Relu"', 'name: "evil\\nname" op: "Bad\\nOp"'))
    out = tmp_path / "o.onnx"
    line = assert_error(tf2ir("convert", model, "-o", out), 3)
    assert "Bad\\nOp" in line and "evil\\nname" in line
    assert not out.exists()


def test_conversion_error_escapes_control_characters_only():
    from tf2ir.ir.errors import ConversionError
    text = str(ConversionError("bad\tvalue", model="dir/m.pb", node="a\nb", op_type="X\x1b[2J",
                               plugin="p\u2028q"))
    assert text == "model dir/m.pb, node 'a\\nb', op X\\x1b[2J, plugin p\\u2028q: bad\\tvalue"
    plain = ConversionError("fails", node="scope/name_1:0 \\ ü", op_type="Conv2D")
    assert str(plain) == "node 'scope/name_1:0 \\ ü', op Conv2D: fails"


@pytest.mark.parametrize("spec", ["input:99999999999999999999999,8", "input:-5,8"])
def test_huge_or_negative_input_dims_are_a_usage_error(tiny, tmp_path, spec):
    assert_error(tf2ir("convert", tiny, "-o", tmp_path / "o.onnx", "--inputs", spec), 2,
                 "--inputs", spec)


@pytest.mark.parametrize("content, needle", [
    (b'["\xff\xfe.pb"]', "not UTF-8"),
    (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
], ids=["not-utf8", "nested-too-deeply"])   # a 200 KB id would not fit the child's environment
def test_bad_manifests_are_one_line_usage_errors(tmp_path, content, needle):
    manifest = tmp_path / "models.json"
    manifest.write_bytes(content)
    assert_error(tf2ir("batch", manifest, "-o", tmp_path / "out"), 2, str(manifest), needle)


@pytest.mark.parametrize("argv, needle", [
    (["convert"], "required"),
    (["convert", "m.pb", "-o", "o.onnx", "--emit", "bad"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
    (["convert", "m.pb", "-o", "o.onnx", "--no-such-option"], "unrecognized"),
    (["batch", "dir", "-o", "out", "--timeout", "soon"], "--timeout"),
])
def test_usage_errors_are_one_line(argv, needle):
    line = assert_error(tf2ir(*argv), 2, needle)
    assert "--help" in line


def test_batch_sidecar_write_leaves_other_files_alone(tmp_path):
    """The sidecar goes through a unique temporary too: a file at the old fixed name
    (OUT.tf2ir.json.tmp) is someone else's and stays."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "a.pbtxt").write_text(TINY)
    out = tmp_path / "out"
    out.mkdir()
    theirs = out / "a.onnx.tf2ir.json.tmp"
    theirs.mkdir()                                   # the old code could not write here
    result = tf2ir("batch", models, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    with open(out / "a.onnx.tf2ir.json") as f:
        assert "input_sha256" in json.load(f)
    assert theirs.is_dir()
    assert sorted(os.listdir(out)) == ["a.onnx", "a.onnx.tf2ir.json", "a.onnx.tf2ir.json.tmp"]
