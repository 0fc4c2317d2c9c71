"""Every string from a model or a file name that reaches HTML is escaped for its context
(issue 21, Escaping): payloads in node names, op types, string attributes, scope names and
file names; the report pages and the batch index opened in headless Chromium, every element
hovered and clicked, and no script but the page's own ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse

import pytest

from tf2ir.tools.report_browser import find_chromium

PWN = "__pwn()"
# Each tries another way out: close the data's script element, break a double- or single-
# quoted attribute, add an element with a handler, end a JavaScript string (U+2028/U+2029),
# cut a C string (NUL), open an HTML comment, and a template placeholder of the page.
PAYLOADS = [f"</script><script>{PWN}</script>", f'" onmouseover="{PWN}" x="',
            f"' onclick='{PWN}' x='", f"<img src=x onerror={PWN}>", "\u2028\u2029", "\0",
            "<!--", "/*%TITLE%*/", f"javascript:{PWN}"]
FILE_NAMES = {"converts": f'a" onmouseover="{PWN}" x=".pb',
              "unsupported": f"javascript:{PWN}.pb",
              "other": f"b' onclick='{PWN}' <img src=x onerror={PWN}>\u2028.pb"}
# Planted in every document before its own scripts: what an injected script would call.
RECORDER = """window.__pwn = () => { window.__pwned = (window.__pwned || 0) + 1;
  console.log("tf2ir-pwned"); };
document.addEventListener("securitypolicyviolation", (e) => {
  (window.__blocked = window.__blocked || []).push(e.violatedDirective + " " + e.sample); });"""


def payload_graph(unsupported: bool):
    """A small GraphDef: the payloads in the input's name, in scope names (two nodes each, so
    the scope is a group), in node names and in a string attribute; with `unsupported`, also
    as op types no plugin maps (the page shows them in its summary)."""
    from tensorboard.compat.proto import graph_pb2, types_pb2
    graph = graph_pb2.GraphDef()
    x = graph.node.add(name="in" + PAYLOADS[3], op="Placeholder")
    x.attr["dtype"].type = types_pb2.DT_FLOAT
    for size in (-1, 4):
        x.attr["shape"].shape.dim.add().size = size
    last = x.name

    def add(name, op, note):
        node = graph.node.add(name=name, op=op, input=[last])
        node.attr["T"].type = types_pb2.DT_FLOAT
        node.attr["note"].s = note.encode()
        return node.name
    for i, payload in enumerate(PAYLOADS):
        scope = f"scope{payload}{i}/"
        last = add(scope + "relu" + payload, "Relu", payload)
        last = add(scope + "neg" + payload, "Neg", payload)
    if unsupported:
        for i, payload in enumerate(PAYLOADS):
            last = add(f"odd{i}{payload}", "Op" + payload, payload)
    return graph


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """`batch --report-html` over models with hostile file names: a report page per model
    (one converts to ONNX, one stops at unsupported op types) and the index."""
    root = tmp_path_factory.mktemp("trust_html")
    (root / "models").mkdir()
    for kind, name in FILE_NAMES.items():
        graph = payload_graph(kind == "unsupported")
        (root / "models" / name).write_bytes(graph.SerializeToString())
    result = subprocess.run([sys.executable, "-m", "tf2ir.tools.cli", "batch", str(root / "models"),
                             "-o", str(root / "onnx"), "--report-html", str(root / "pages"),
                             "-q", "-j", "2"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 3, result.stderr     # the unsupported op types, nothing else
    assert sorted(os.listdir(root / "pages")) == sorted(
        [n + ".html" for n in FILE_NAMES.values()] + ["index.html"])
    return root / "pages"


@pytest.fixture(scope="module")
def browser():
    if find_chromium() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    from tf2ir.tools.report_browser import Browser
    with Browser(width=1400, height=900, timeout=60) as b:
        b.add_init_script(RECORDER)
        yield b


# Hover and click everything: open every group and show the constants in every pane, then
# for every node box: hover, click (its details go to the panel), and hover and click every
# element of the panel (links to the other views, subgraphs); last, every element of the page.
EVERYTHING = """(async () => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const poke = (el, kinds) => { for (const type of kinds) el.dispatchEvent(new MouseEvent(type,
    { bubbles: true, cancelable: true, view: window })); };
  const HOVER = ["mouseover", "mouseenter", "mousemove", "mouseout", "mouseleave"];
  const ALL = [...HOVER, "mousedown", "mouseup", "click", "dblclick", "contextmenu"];
  let clicked = 0;
  for (const view of ["tf", "ir", "onnx"]) {
    const pane = document.getElementById("pane-" + view);
    pane.querySelector('[data-act="const"]').click();
    for (let round = 0; round < 20; round++) {
      const closed = [...pane.querySelectorAll(".grp:not(.open)")];
      if (!closed.length) break;
      poke(closed[0], ALL); clicked++;   // handlers run at once: it is drawn open now
    }
    const ids = [...pane.querySelectorAll(".node")].map((e) => e.id);
    for (const id of ids) {
      const el = document.getElementById(id);
      if (!el) continue;
      poke(el, ALL); clicked++;
      for (const item of document.querySelectorAll("#panel *")) poke(item, HOVER);
      for (const a of [...document.querySelectorAll("#panel a")].slice(0, 3)) { poke(a, ["click"]); clicked++; }
    }
    await frame();
  }
  for (const el of [...document.querySelectorAll("*")]) { poke(el, ALL); clicked++; }
  await frame();
  return clicked;
})()"""


def assert_no_script_ran(browser, page):
    state = browser.evaluate("[window.__pwned, window.__blocked || [], window.__errors || []]")
    assert state == [None, [], []], (page, state)   # blocked by CSP would also mean unescaped
    assert "tf2ir-pwned" not in browser.console(), page


def real_mouse_sweep(browser, width=1400, height=900, step=150):
    """Trusted mouse moves over the whole window (the synthetic events above are not)."""
    for y in range(5, height, step):
        for x in range(5, width, step):
            browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})


def test_report_pages_run_no_script_from_the_model(browser, pages):
    for kind, name in FILE_NAMES.items():
        page = pages / (name + ".html")
        browser.open_report(str(page))
        assert browser.evaluate("document.title") == f"tf2ir report: {name}"
        counts = browser.evaluate("['tf','ir','onnx'].map(v => document.querySelectorAll("
                                  "`#pane-${v} .node, #pane-${v} .grp`).length)")
        assert counts[0] > 5 and counts[1] > 5, counts                    # drawn normally
        assert (counts[2] > 5) == (kind != "unsupported"), counts
        for selector in ("#pane-tf .node", "#pane-ir .node"):
            browser.evaluate(f"tf2irReport.centre(tf2irReport.panes.{selector[6:8]}, 'n' + "
                             f"document.querySelector('{selector}').dataset.id)")
            browser.click(selector)
        # every group open: the strings arrive as text, exactly (a NUL is dropped from text)
        browser.evaluate("document.querySelectorAll('[data-act=\"open\"]').forEach(b => b.click())")
        text = browser.evaluate("document.documentElement.textContent")
        missing = [p for p in PAYLOADS if p != "\0" and p not in text]
        assert not missing, (kind, missing)
        real_mouse_sweep(browser)
        assert browser.evaluate(EVERYTHING) > 50
        assert_no_script_ran(browser, page)
        panel = browser.evaluate(f"(() => {{ tf2irReport.select('tf', tf2irReport.find('tf', "
                                 f"{json.dumps('scope' + PAYLOADS[0] + '0/relu' + PAYLOADS[0])}));"
                                 " return document.getElementById('panel').textContent; })()")
        assert panel.count(PAYLOADS[0]) >= 3, panel      # node name, its title, the attribute
        if kind == "unsupported":
            summary = browser.evaluate("document.getElementById('summary').textContent")
            assert all("Op" + p.replace("\0", "\ufffd") in summary for p in PAYLOADS if p != "\0")


def test_the_batch_index_runs_no_script_and_links_stay_files(browser, pages):
    index = pages / "index.html"
    browser.events.clear()
    browser.navigate(str(index))
    browser.wait_for("document.readyState === 'complete' && document.querySelectorAll('tr').length")
    rows = browser.evaluate("[...document.querySelectorAll('a')].map(a => [a.textContent, a.href])")
    assert sorted(text for text, _ in rows) == sorted(FILE_NAMES.values())
    hovered = browser.evaluate("(() => { let n = 0; for (const el of document.querySelectorAll('*'))"
                               " for (const t of ['mouseover', 'mouseenter', 'mousemove', 'focus'])"
                               " { el.dispatchEvent(new MouseEvent(t, {bubbles: true})); n++; }"
                               " return n; })()")
    assert hovered > 20
    real_mouse_sweep(browser)
    assert_no_script_ran(browser, index)
    for number, (text, href) in enumerate(rows):       # click each link: it opens its page
        browser.events.clear()
        browser.navigate(str(index))
        browser.wait_for("document.readyState === 'complete' && document.querySelectorAll('a').length")
        browser.evaluate(f"document.querySelectorAll('a')[{number}].click()")
        url = browser.wait_for("location.href.endsWith('.html') && !location.href.endsWith("
                               "'/index.html') && document.readyState === 'complete' && location.href")
        assert urllib.parse.unquote(urllib.parse.urlsplit(url).path) == str(pages / (text + ".html"))
        browser.wait_for("window.tf2irReady")
        assert_no_script_ran(browser, url)
