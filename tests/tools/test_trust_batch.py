"""A hostile batch manifest or model file name stays harmless (issue 21): outputs never leave
-o (finding 2), index.html escapes every name (finding 3), a YAML alias bomb is refused at
once (finding 9), and a manifest field of the wrong type is one usage line (finding 10)."""

from __future__ import annotations

import html.parser
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

from tf2ir.tools.cli import main

TINY = """node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 4 } } } } }
node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } }
"""


def cli(*args, timeout=120):
    """The command line in a fresh process, never waiting past `timeout` (a hang fails)."""
    return subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tf2ir: error: "), stderr
    assert "internal error" not in lines[0] and "Traceback" not in stderr
    return lines[0]


def files_under(root) -> set:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def workspace(tmp_path):
    """A manifest directory with one good model, a victim file beside it, and -o below it."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.pbtxt").write_text(TINY)
    (tmp_path / "victim.txt").write_text("keep me\n")
    return tmp_path


def run_manifest(workspace, capsys, models, name="m.json", extra=()):
    manifest = workspace / name
    manifest.write_text(json.dumps(models) if name.endswith(".json") else models)
    status = main(["batch", str(manifest), "-o", str(workspace / "out"), "-q", "-j", "1", *extra])
    return status, capsys.readouterr().err


# -- finding 2: outputs stay inside -o --------------------------------------------------------
@pytest.mark.parametrize("output", ["../victim.txt", "{victim}", "link/victim.txt",
                                    "sub/../../victim.txt"])
def test_a_manifest_output_that_leaves_o_is_refused_before_anything_is_written(
        workspace, capsys, output):
    (workspace / "out").mkdir()
    os.symlink(workspace, workspace / "out" / "link")       # a symlink in -o that leads out
    before = files_under(workspace)
    output = output.format(victim=workspace / "victim.txt")
    status, err = run_manifest(workspace, capsys, [{"path": "models/tiny.pbtxt", "output": output}])
    line = one_error_line(err)
    assert status == 2
    assert "model #1 ('models/tiny.pbtxt')" in line and "outside -o" in line, line
    assert (workspace / "victim.txt").read_text() == "keep me\n"
    assert files_under(workspace) == before | {"m.json"}     # no sidecar, no temporary, nothing


def test_a_sidecar_symlink_out_of_o_is_refused(workspace, capsys):
    (workspace / "out").mkdir()
    os.symlink(workspace / "victim.txt", workspace / "out" / "tiny.onnx.tf2ir.json")
    status, err = run_manifest(workspace, capsys, ["models/tiny.pbtxt"])
    assert status == 2 and "its sidecar" in one_error_line(err)
    assert (workspace / "victim.txt").read_text() == "keep me\n"


def test_outputs_inside_o_still_convert(workspace):
    """'..' that stays inside -o is fine; a model path outside the manifest's folder is read."""
    (workspace / "conf").mkdir()
    manifest = workspace / "conf" / "m.json"
    manifest.write_text(json.dumps([{"path": "../models/tiny.pbtxt", "output": "a/../b/t.onnx"}]))
    result = cli("batch", str(manifest), "-o", str(workspace / "out"), "-q", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert files_under(workspace / "out") == {"b/t.onnx", "b/t.onnx.tf2ir.json"}


# -- finding 3: the batch index escapes file names ----------------------------------------------
class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.handlers, self.links, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        if tag == "a":
            self.links.append(dict(attrs)["href"])


def test_the_batch_index_escapes_hostile_file_names(tmp_path):
    names = ['a" onmouseover="alert(1)" x=".pbtxt', "b' onclick='alert(1)' x='.pbtxt",
             "<img src=x onerror=alert(1)>.pbtxt", "javascript:alert(1).pbtxt"]
    (tmp_path / "models").mkdir()
    for name in names:
        (tmp_path / "models" / name).write_text(TINY)
    pages = tmp_path / "pages"
    result = cli("batch", str(tmp_path / "models"), "-o", str(tmp_path / "out"), "-q", "-j", "2",
                 "--report-html", str(pages))
    assert result.returncode == 0, result.stderr
    parser = _Links()
    text = (pages / "index.html").read_text()
    parser.feed(text)
    assert parser.handlers == [] and "img" not in parser.tags and "script" not in parser.tags
    assert len(parser.links) == len(names)
    for href in parser.links:
        assert urllib.parse.urlsplit(href).scheme == "" and "/" not in href   # a file here
        assert (pages / urllib.parse.unquote(href)).is_file()
    assert sorted(urllib.parse.unquote(h) for h in parser.links) == sorted(n + ".html" for n in names)
    assert "Content-Security-Policy" in text and "script-src" not in text   # runs no script


# -- finding 9: a YAML alias bomb ---------------------------------------------------------------
def _alias_bomb() -> str:
    """~460 bytes whose last alias stands for 9**9 strings (the issue's 716-byte file is alike)."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\nmodels:\n- path: models/tiny.pbtxt\n  inputs: *a8\n"


def test_a_yaml_alias_bomb_is_refused_at_once(workspace):
    pytest.importorskip("yaml")
    manifest = workspace / "bomb.yaml"
    manifest.write_text(_alias_bomb())
    assert manifest.stat().st_size < 1000
    result = cli("batch", str(manifest), "-o", str(workspace / "out"), "-q", timeout=60)
    line = one_error_line(result.stderr)
    assert result.returncode == 2 and "YAML aliases" in line and "line 2" in line, line
    assert len(line) < 300 and not (workspace / "out").exists()


@pytest.mark.parametrize("text", ["- " * 100_000 + "x\n", "[" * 1_000_000 + "]" * 1_000_000],
                         ids=["block", "flow"])   # (a long id would go to the child's environment)
def test_deep_yaml_is_refused_without_crashing(workspace, text):
    """LibYAML's composer recurses per level (100,000 block levels overflowed the C stack:
    SIGSEGV) and its scanner is slow on deep flow nesting: both stop at 32 levels."""
    pytest.importorskip("yaml")
    manifest = workspace / "deep.yaml"
    manifest.write_text(text)
    result = cli("batch", str(manifest), "-o", str(workspace / "out"), "-q", timeout=60)
    assert result.returncode == 2 and "nested too deeply" in one_error_line(result.stderr)


def test_yaml_without_aliases_still_reads(workspace, capsys):
    pytest.importorskip("yaml")
    status, err = run_manifest(workspace, capsys, "- path: models/tiny.pbtxt\n  output: 5\n",
                               name="m.yaml")
    assert status == 2 and '"output" must be a string, not an int 5' in one_error_line(err)


@pytest.mark.parametrize("text", ["- {path: a.pb, output: !!float }\n",
                                  "- {path: a.pb, output: !!float ''}\n"])
def test_a_yaml_constructor_error_is_a_usage_error(workspace, capsys, text):
    """PyYAML's float constructor indexes an empty scalar (IndexError: 'internal error',
    found by the manifest fuzz kind); any constructor's failure is one usage line."""
    pytest.importorskip("yaml")
    status, err = run_manifest(workspace, capsys, text, name="m.yml")
    assert status == 2 and "not a valid YAML manifest: IndexError" in one_error_line(err)


def test_a_manifest_value_is_never_shown_whole(workspace, capsys):
    status, err = run_manifest(workspace, capsys, [{"path": "models/tiny.pbtxt",
                                                    "inputs": [["x" * 1000] * 1000]}])
    line = one_error_line(err)
    assert status == 2 and '"inputs"' in line and len(line) < 300, line


def test_a_manifest_over_the_size_limit_is_not_read(workspace, capsys):
    from tf2ir.tools.manifest import MAX_MANIFEST_BYTES, MAX_YAML_BYTES
    with open(workspace / "big.json", "wb") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)
    status = main(["batch", str(workspace / "big.json"), "-o", str(workspace / "out"), "-q"])
    assert status == 2 and "over 16 MiB" in one_error_line(capsys.readouterr().err)
    (workspace / "big.yaml").write_text("- a.pb\n" * (MAX_YAML_BYTES // 7 + 1))
    status = main(["batch", str(workspace / "big.yaml"), "-o", str(workspace / "out"), "-q"])
    assert status == 2 and "at most 2 MiB" in one_error_line(capsys.readouterr().err)


# -- finding 10 (the manifest half): a field of the wrong type -----------------------------------
@pytest.mark.parametrize("entry, needle", [
    ({"path": "models/tiny.pbtxt", "output": 5}, '"output" must be a string, not an int 5'),
    ({"path": "models/tiny.pbtxt", "output": ["a.onnx"]}, '"output" must be a string, not a list'),
    ({"path": "models/tiny.pbtxt", "output": "a\0b.onnx"}, '"output" \'a\\x00b.onnx\' holds a NUL'),
    ({"path": "models/tiny.pbtxt", "output": {"a": 1}}, '"output" must be a string, not a mapping'),
    ({"path": "models/tiny.pbtxt", "output": "sub/"}, '"output" \'sub/\' names a directory'),
    ({"path": "models/tiny.pbtxt", "inputs": 7}, '"inputs" must be a string or a list of strings'),
    ({"path": "models/tiny.pbtxt", "fusion": ["off:gelu", 3]}, '"fusion" must be a string or a'),
    ({"path": "models/tiny.pbtxt", "outputs": ["y\0"]}, '"outputs" holds a NUL'),
    ({"path": 7}, '"path" must be a string, not an int 7'),
    ({"path": "models/tiny\0.pbtxt"}, '"path" \'models/tiny\\x00.pbtxt\' holds a NUL'),
    ({"path": "models/tiny.pbtxt", "outptu": "a.onnx"}, "unknown keys 'outptu'"),
    (["models/tiny.pbtxt"], "model #1 is a list"),
])
def test_a_manifest_field_of_the_wrong_type_is_one_usage_line(workspace, capsys, entry, needle):
    status, err = run_manifest(workspace, capsys, [entry])
    line = one_error_line(err)
    assert status == 2 and "model #1" in line and needle in line, line
    assert not (workspace / "out").exists()
