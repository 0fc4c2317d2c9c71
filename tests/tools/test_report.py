"""`tf2ir report`, `convert --report` and `batch --report-html`: one self-contained HTML page
with the TF, IR and ONNX graphs linked; opened in real headless Chromium."""

from __future__ import annotations

import io
import json
import os
import re

import pytest

from tests.conftest import run_cli
from tf2ir.tools.report_browser import find_chromium

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "data", "sample_cnn.pb")


def report_data(path):
    """The JSON a report embeds."""
    text = open(path, encoding="utf-8").read()
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    assert match, "no embedded data"
    return json.loads(match.group(1))


def nodes_named(data, view, name):
    return [i for i, n in enumerate(data["nodes"][view]) if n["n"] == name]


def build_report(model, out, **options):
    """The report through the Python API (in process: no start-up per test)."""
    from tf2ir.parser.pipeline import Options, Pipeline
    from tf2ir.tools.report import ReportBuilder
    builder = ReportBuilder(Pipeline(options=Options(**options)), model)
    status = builder.run_and_write(str(out))
    return status, report_data(out)


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "sample.html"
    result = run_cli("report", SAMPLE, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return str(out)


def test_sample_cnn_report_is_one_self_contained_page(sample_report):
    text = open(sample_report, encoding="utf-8").read()
    assert "dagre" in text and "tf2irReport" in text          # the layout library is inline
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:|//)', text)   # nothing to fetch
    assert "sourceMappingURL" not in text
    data = report_data(sample_report)
    summary = data["summary"]
    assert summary["status"] == "ok" and summary["onnx_nodes"] > 0
    assert {"load", "mapping", "compile"} <= set(summary["phases"])
    assert any(p["name"] == "layout" and p["kind"] == "onnx" for p in summary["passes"])
    assert sum(p["removed"] for p in summary["passes"]) > 0      # the passes removed nodes


def test_tf_ir_and_onnx_nodes_are_linked_both_ways(sample_report):
    data = report_data(sample_report)
    tf_nodes, ir_nodes = data["nodes"]["tf"], data["nodes"]["ir"]
    conv = next(i for i, n in enumerate(tf_nodes) if n["op"] == "Conv2D")
    ir = tf_nodes[conv]["ir"]
    assert [ir_nodes[i]["n"] for i in ir] == [tf_nodes[conv]["n"]]
    assert conv in ir_nodes[ir[0]]["tf"]
    onnx = tf_nodes[conv]["onnx"]
    assert "Conv" in {data["nodes"]["onnx"][i]["op"] for i in onnx}
    details = ir_nodes[ir[0]]["d"]
    assert details["origin op type"] == "Conv2D" and "priority" in details["plugin"]
    assert any("[auto: " in v for v in details["attributes"].values())   # provenance
    assert any("NHWC" in edge[2] or "NHWC" in edge[3:] for g in data["graphs"]
               if g["view"] == "ir" for edge in g["edges"])               # formats on edges


def test_a_model_with_unsupported_ops_still_gets_its_report(unsupported_pb, tmp_path):
    out = tmp_path / "r.html"
    result = run_cli("report", unsupported_pb, "-o", str(out))
    assert result.returncode == 3, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Dawsn" in lines[0] and f"report written to {out}" in lines[0]
    data = report_data(out)
    assert data["summary"]["status"] == "unsupported"
    unsupported = {u["op"]: u for u in data["summary"]["unsupported"]}
    assert set(unsupported) == {"Dawsn", "Expint", "Xlog1py"}
    red = [n for n in data["nodes"]["tf"] if n.get("cls") == "unsupported"]
    assert {n["op"] for n in red} == {"Dawsn", "Expint", "Xlog1py"} and len(red) == 4
    assert unsupported["Dawsn"]["nodes"]


def test_transformer_block_with_fusions_and_control_flow(block_pb, tmp_path):
    status, data = build_report(block_pb, tmp_path / "block.html")
    assert status == 0
    fusions = {f["name"]: f for f in data["summary"]["fusions"]}
    assert fusions["layer_norm"]["matches"] == 1 and fusions["layer_norm"]["removed"] > 0
    tf_graph = data["graphs"][0]
    fused_groups = [k for k, g in enumerate(tf_graph["groups"]) if g["kind"] == "fusion"]
    assert fused_groups
    # many-to-one: every TF node of the LayerNorm group links to the one LayerNorm IR node
    members = [n for n in data["nodes"]["tf"] if n["g"] == 0 and n.get("p") in fused_groups]
    targets = {data["nodes"]["ir"][i]["op"] for n in members for i in n.get("ir", [])}
    assert "LayerNorm" in targets
    # control flow: the If and While nodes open their bodies as nested graphs of both views
    nested = {n["op"]: n["sub"] for n in data["nodes"]["tf"] if n.get("sub")}
    assert {op.replace("Stateless", "") for op in nested} == {"If", "While"}
    for subs in nested.values():
        for _, g in subs:
            body = data["graphs"][g]
            assert body["view"] == "tf" and body["nodes"] and data["graphs"][body["pair"]]["nodes"]
    onnx_subs = {n["op"]: [k for k, _ in n["sub"]] for n in data["nodes"]["onnx"] if n.get("sub")}
    assert onnx_subs["If"] == ["else_branch", "then_branch"] and onnx_subs["Loop"] == ["body"]
    # the GELU inside the While body was fused there: an outlined group → one Gelu IR node
    body = next(g for g in data["graphs"] if g["view"] == "tf" and g["parent"] is not None
                and any(gr["kind"] == "fusion" for gr in g["groups"]))
    inner = [data["nodes"]["tf"][i] for i in body["nodes"]
             if body["groups"][data["nodes"]["tf"][i]["p"]]["kind"] == "fusion"
             if data["nodes"]["tf"][i]["p"] >= 0]
    assert {data["nodes"]["ir"][i]["op"] for n in inner for i in n.get("ir", [])} == {"Gelu"}


WRONG_RELU = """
from tf2ir.plugins import hookimpl, register_op


@hookimpl
def tf2ir_op_mappings():
    return [register_op("Sigmoid").origin_op_type("Relu").parse_params_fn(lambda src, op: None)
            .with_priority(5)]
"""


def test_verify_colours_the_nodes_and_marks_the_first_divergence(tmp_path):
    """A plugin maps Relu wrongly (to Sigmoid): exit 4, the Relu node is the first to diverge."""
    (tmp_path / "wrong_relu.py").write_text(WRONG_RELU)
    out = tmp_path / "r.html"
    result = run_cli("report", SAMPLE, "-o", str(out), "--verify", "--plugin-dir",
                     str(tmp_path / "wrong_relu.py"), "--passes", "off:all")   # Relu's tensor stays
    assert result.returncode == 4, result.stderr
    data = report_data(out)
    verify = data["summary"]["verify"]
    assert not all(o["ok"] for o in verify["outputs"])
    first = data["nodes"]["tf"][verify["first_id"]]
    assert first["op"] == "Relu" and "first" in first["cls"] and first["n"] == verify["first"]
    coloured = [n for n in data["nodes"]["tf"] if "err" in n]
    assert len(coloured) > 5 and any(n["err"] < 1e-4 for n in coloured)
    ir = data["nodes"]["ir"][first["ir"][0]]
    assert ir["op"] == "Sigmoid" and "wrong_relu" in ir["d"]["plugin"]
    assert any("overrides" in o for o in data["summary"]["overrides"])


ADD_N_AS_SUBGRAPH = """
from tf2ir.plugins import hookimpl, register_op


def parse_op_to_graph(src, graph):
    total = graph.data(0)
    for index in range(1, src.attr("N")):
        total = graph.add_op("Add", [total, graph.data(index)], name=f"add{index - 1}").outputs[0]
    graph.set_outputs([total])


@hookimpl
def tf2ir_op_mappings():
    return [register_op("PartitionedCall").origin_op_type("AddN")
            .parse_op_to_graph_fn(parse_op_to_graph).with_priority(10)]
"""
ADD_N_GRAPH = """
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 2 } } } } }
node { name: "total" op: "AddN" input: "x" input: "x" input: "x"
       attr { key: "N" value { i: 3 } } attr { key: "T" value { type: DT_FLOAT } } }
"""


def test_one_to_many_mapping_shows_the_tf_node_and_its_subgraph(tmp_path):
    (tmp_path / "add_n.py").write_text(ADD_N_AS_SUBGRAPH)
    (tmp_path / "add_n.pbtxt").write_text(ADD_N_GRAPH)
    out = tmp_path / "r.html"
    result = run_cli("report", str(tmp_path / "add_n.pbtxt"), "-o", str(out),
                     "--plugin-dir", str(tmp_path / "add_n.py"))
    assert result.returncode == 0, result.stderr
    data = report_data(out)
    tf_node = data["nodes"]["tf"][nodes_named(data, "tf", "total")[0]]
    call = data["nodes"]["ir"][tf_node["ir"][0]]
    assert call["op"] == "PartitionedCall" and "add_n" in call["d"]["plugin"]
    [(key, g)] = call["sub"]
    assert key == "f" and sorted(data["nodes"]["ir"][i]["op"] for i in data["graphs"][g]["nodes"]) \
        == ["Add", "Add", "Data", "Data", "Data"]
    assert [data["nodes"]["onnx"][i]["op"] for i in tf_node["onnx"]] == ["Add", "Add"]


def test_convert_writes_the_model_and_the_report(tmp_path):
    out, page = tmp_path / "m.onnx", tmp_path / "m.html"
    result = run_cli("convert", SAMPLE, "-o", str(out), "--report", str(page), "--passes", "off:cse")
    assert result.returncode == 0, result.stderr
    assert out.exists()
    data = report_data(page)
    assert data["summary"]["onnx_nodes"] > 0
    assert "cse" not in {p["name"] for p in data["summary"]["passes"]}


@pytest.mark.parametrize("args, code, needle", [
    (["missing.pb"], 1, "does not exist"),
    ([SAMPLE, "--fusion", "off:nope"], 2, "nope"),
])
def test_errors_are_one_line_and_leave_no_file(tmp_path, args, code, needle):
    model = args[0] if args[0] == SAMPLE else str(tmp_path / args[0])
    out = tmp_path / "r.html"
    result = run_cli("report", model, *args[1:], "-o", str(out))
    assert result.returncode == code and len(result.stderr.strip().splitlines()) == 1
    assert needle in result.stderr and not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_batch_writes_a_report_per_model_and_an_index(tmp_path):
    import shutil
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(SAMPLE, models / "a.pb")
    shutil.copy(SAMPLE, models / "b.pb")
    pages = tmp_path / "pages"
    result = run_cli("batch", str(models), "-o", str(tmp_path / "onnx"), "--report-html", str(pages),
                     "-j", "1", "--quiet")
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(pages)) == ["a.pb.html", "b.pb.html", "index.html"]
    index = (pages / "index.html").read_text()
    assert 'href="a.pb.html"' in index and 'href="b.pb.html"' in index and "ok" in index
    assert report_data(pages / "a.pb.html")["summary"]["status"] == "ok"


# -- in the browser ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    from tf2ir.tools.report_browser import Browser
    with Browser(width=1400, height=900) as b:
        yield b


def _pixel_spread(png: bytes) -> float:
    from PIL import Image, ImageStat
    image = Image.open(io.BytesIO(png)).convert("L")
    return ImageStat.Stat(image).stddev[0]


def test_report_opens_in_chromium_and_clicks_link_the_views(browser, sample_report):
    ms = browser.open_report(sample_report)
    assert ms < 5000
    counts = browser.evaluate("['tf','ir','onnx'].map(v => document.querySelectorAll("
                              "`#pane-${v} .node`).length)")
    assert all(c > 3 for c in counts), counts
    data = report_data(sample_report)
    conv = next(n for n in data["nodes"]["tf"] if n["op"] == "Conv2D")
    name = json.dumps(conv["n"])
    selector = f'#pane-tf .node[data-name={name}]'
    browser.evaluate(f"tf2irReport.centre(tf2irReport.panes.tf, 'n' + "
                     f"document.querySelector({json.dumps(selector)}).dataset.id)")
    browser.click(selector)
    ir_state = browser.evaluate(f"(() => {{ const e = document.querySelector("
                                f"'#pane-ir .node[data-name=' + JSON.stringify({name}) + ']');"
                                f" return e ? e.getAttribute('class') : null; }})()")
    assert ir_state is not None and "hl" in ir_state.split()
    onnx_hl = browser.evaluate("document.querySelectorAll('#pane-onnx .node.hl').length")
    assert onnx_hl >= 1
    panel = browser.evaluate("document.getElementById('panel').textContent")
    assert conv["n"] in panel and "Conv2D" in panel
    assert _pixel_spread(browser.screenshot()) > 10      # not a blank page


def test_unsupported_nodes_are_red_in_chromium(browser, unsupported_pb, tmp_path):
    out = tmp_path / "u.html"
    assert run_cli("report", unsupported_pb, "-o", str(out)).returncode == 3
    browser.open_report(str(out))
    red = browser.evaluate("[...document.querySelectorAll('#pane-tf .node.unsupported')]"
                           ".map(e => getComputedStyle(e.querySelector('rect')).stroke)")
    assert len(red) == 4 and set(red) == {"rgb(221, 0, 0)"}


# -- fixtures that need TensorFlow -----------------------------------------------------------
@pytest.fixture
def unsupported_pb(freeze):
    import tensorflow as tf

    def fn(x):
        a = tf.math.special.dawsn(x)          # Dawsn, Expint, Xlog1py: no built-in plugin
        b = tf.math.special.dawsn(x * 2.0)
        c = tf.math.xlog1py(a + b, x)
        return tf.nn.relu(tf.math.special.expint(c))
    path, _ = freeze(fn, tf.TensorSpec([None, 4], tf.float32, name="x"), "unsupported")
    return path


@pytest.fixture
def block_pb(freeze):
    """A transformer block (LayerNorm and GELU fusions) with a cond and a while loop."""
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(0)
    attention = keras.layers.MultiHeadAttention(2, 4)
    norm = keras.layers.LayerNormalization()
    dense = keras.layers.Dense(8, activation="gelu")

    def fn(x):
        h = norm(x + attention(x, x))
        h = tf.cond(tf.shape(h)[1] > 3, lambda: h * 0.5, lambda: h + 1.0)
        return tf.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a + dense(a) * 0.1),
                             [tf.constant(0), h])[1]
    path, _ = freeze(fn, tf.TensorSpec([None, None, 8], tf.float32, name="x"), "block")
    return path


# -- big graphs (slow: CI runs them) ----------------------------------------------------------
@pytest.mark.slow
def test_resnet50_and_a_10000_node_graph_open_quickly(browser, keras_app, tmp_path):
    """ResNet50 (1,831 TF nodes) draws in under 2 s; a generated 10,000-node graph opens with
    its groups closed, and opening a group and selecting a node inside stays interactive."""
    from tf2ir.tools.bench import generate_ladder
    resnet, ladder = tmp_path / "resnet50.html", tmp_path / "ladder.html"
    assert run_cli("report", keras_app("ResNet50").path, "-o", str(resnet)).returncode == 0
    pb = generate_ladder(str(tmp_path / "ladder.pb"), 10_000)
    assert run_cli("report", pb, "-o", str(ladder)).returncode == 0
    assert browser.open_report(str(resnet)) < 2000
    assert browser.open_report(str(ladder)) < 2000
    boxes = browser.evaluate("document.querySelectorAll('#pane-tf .node, #pane-tf .grp').length")
    assert boxes < 100                           # what is drawn is what is visible
    ms = browser.evaluate("(() => { const t = performance.now(); tf2irReport.select('tf', "
                          "tf2irReport.find('tf', 'rung1000/matmul')); return performance.now() - t; })()")
    assert ms < 3000
    assert browser.evaluate("document.querySelectorAll('#pane-ir .node.hl').length") == 1
