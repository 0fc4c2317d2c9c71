"""Open a tf2ir HTML report in headless Chromium (the system browser, driven through the
Chrome DevTools protocol over a pipe: no network, no extra package) to time its opening,
click its nodes and take screenshots. The report tests use it, and so does:

    python -m tf2ir.tools.report_browser report.html --screenshot shot.png
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars",
         "--remote-debugging-pipe"]


def find_chromium() -> Optional[str]:
    """The Chromium executable: $TF2IR_CHROMIUM, else the first on PATH."""
    given = os.environ.get("TF2IR_CHROMIUM")
    if given:
        return given
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; `call` sends a DevTools command to the page."""

    def __init__(self, executable: Optional[str] = None, width: int = 1600, height: int = 1000,
                 timeout: float = 60.0):
        executable = executable or find_chromium()
        if executable is None:
            raise BrowserError("no Chromium found (apt-get install chromium)")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="tf2ir_chromium_")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire():   # the browser reads commands on fd 3 and writes replies on fd 4
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
        try:
            self.process = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                preexec_fn=wire, close_fds=False)   # (close_fds would close 3 and 4 after wire)
        except OSError as exc:
            for fd in (to_browser_r, self._to_browser, self._from_browser, from_browser_w):
                os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)
            raise BrowserError(f"cannot start {executable}: {exc.strerror}") from None
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: List[Dict[str, Any]] = []
        self.session: Optional[str] = None
        try:
            self._open_page(width, height)
        except BaseException:
            self.close()
            raise

    def _open_page(self, width: int, height: int) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)
        attached = self.call("Target.attachToTarget", {"targetId": target["targetId"],
                                                       "flatten": True}, browser=True)
        self.session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False})

    # -- the protocol --------------------------------------------------------------------
    def _read_message(self, deadline: float) -> Dict[str, Any]:
        import select
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed its pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: Optional[dict] = None, browser: bool = False) -> dict:
        self._next_id += 1
        request: Dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not browser:
            request["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error'].get('message')}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")

    # -- what the tests and the tool do --------------------------------------------------
    def open_report(self, path: str) -> float:
        """Load the report; return the milliseconds from navigation to the first frame
        after all panes are drawn (the page sets window.tf2irReady to performance.now())."""
        self.events.clear()
        self.navigate(path)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            ready = self.evaluate("window.tf2irReady === undefined ? null : window.tf2irReady")
            if ready is not None:
                return float(ready)
            error = self.evaluate("window.__errors ? window.__errors.join('; ') : null")
            if error:
                raise BrowserError(error)
            time.sleep(0.05)
        raise BrowserError("the report did not finish drawing")

    def navigate(self, path: str) -> None:
        """Open the file `path` (percent-encoded: a name may hold '#', '?' or quotes)."""
        import pathlib
        self.call("Page.navigate", {"url": pathlib.Path(os.path.abspath(path)).as_uri()})

    def add_init_script(self, source: str) -> None:
        """Run `source` in every document this page opens, before the document's own scripts
        (tests use it to plant a recorder that a script injected by a model would call)."""
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def wait_for(self, expression: str) -> Any:
        """Evaluate `expression` until it is truthy (up to the timeout); return its value."""
        deadline = time.monotonic() + self.timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except BrowserError as exc:    # e.g. the page is navigating: its context is gone
                value, last = None, f" ({exc})"
            if value:
                return value
            time.sleep(0.05)
        raise BrowserError(f"timed out waiting for {expression}{last}")

    def console(self) -> List[str]:
        """The console messages logged since the last page was opened (as text)."""
        return [" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"])
                for e in self.events if e.get("method") == "Runtime.consoleAPICalled"]

    def click(self, selector: str) -> None:
        """A real mouse click (pressed, released) at the middle of the element."""
        box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                            ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path: Optional[str] = None) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        if path:
            from tf2ir.ir.atomic import atomic_output
            with atomic_output(path) as tmp:
                with open(tmp, "wb") as f:
                    f.write(data)
        return data

    def close(self) -> None:
        try:
            self.call("Browser.close", browser=True)
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tf2ir.tools.report_browser",
                                     description="Open tf2ir reports in headless Chromium and "
                                                 "print how long each took to draw.")
    parser.add_argument("reports", nargs="+", help="report .html files")
    parser.add_argument("--screenshot", metavar="PNG", help="screenshot of the (last) report")
    parser.add_argument("--select", metavar="VIEW:NAME",
                        help="select this node first (e.g. tf:dense/MatMul)")
    parser.add_argument("--size", default="1600x1000", help="window size (default 1600x1000)")
    args = parser.parse_args(argv)
    width, height = (int(x) for x in args.size.split("x"))
    try:
        return _show(args, width, height)
    except BrowserError as exc:
        print(f"report_browser: error: {exc}", file=sys.stderr)
        return 1


def _show(args, width: int, height: int) -> int:
    with Browser(width=width, height=height) as browser:
        for report in args.reports:
            ms = browser.open_report(report)
            print(f"{report}: {os.path.getsize(report) / 1e6:.2f} MB, drawn in {ms:.0f} ms")
        if args.select:
            view, name = args.select.split(":", 1)
            browser.evaluate(f"tf2irReport.select({json.dumps(view)}, "
                             f"tf2irReport.find({json.dumps(view)}, {json.dumps(name)}))")
        if args.screenshot:
            browser.screenshot(args.screenshot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
