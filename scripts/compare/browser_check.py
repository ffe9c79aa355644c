#!/usr/bin/python3
"""Opens a report page in headless Chromium and fails unless it renders cleanly.

Usage: browser_check.py PAGE.html [--screenshot FILE.png]   (the top 1100x1000 pixels of the page)

Talks to Chromium over the DevTools protocol (--remote-debugging-pipe: JSON messages separated by
NUL bytes on file descriptors 3 and 4), so it needs nothing beyond Debian's chromium and Python.
It fails (exit 1, naming each problem) on:
  - any console error or uncaught exception, and any log entry of level error;
  - any request for something other than the page itself or an inline data: URL (the page must
    be self-contained and open offline);
  - an image with class "plot" that did not decode, has no size, or says it has no data
    (data-series="0"), or a page without any plot;
  - a table without a body row, or no table at all;
  - a missing section (Summary, Machine, Support, Conformance, Accuracy, Speed, and one per
    operator of MatMul's family: Gemm, MatMulInteger, QLinearMatMul).
"""

import argparse
import base64
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

SECTIONS = [
    "summary",
    "machine",
    "support",
    "conformance",
    "accuracy",
    "speed",
    "gemm",
    "matmulinteger",
    "qlinearmatmul",
]

# Runs in the page once it has loaded: what the checks above need, as JSON.
INSPECT = """
(() => {
  const plots = [...document.querySelectorAll('img.plot')].map(img => ({
    id: img.id, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
    series: Number(img.dataset.series || 0)}));
  const tables = [...document.querySelectorAll('table')].map(t => ({
    id: t.id, caption: t.caption ? t.caption.textContent.slice(0, 80) : '',
    rows: t.tBodies.length ? t.tBodies[0].rows.length : 0}));
  const sections = [...document.querySelectorAll('h2[id]')].map(h => h.id);
  return JSON.stringify({plots, tables, sections, title: document.title});
})()
"""


class Chromium:
    """A headless Chromium driven over --remote-debugging-pipe."""

    def __init__(self, binary, user_data_dir):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def child_fds():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--remote-debugging-pipe",
                f"--user-data-dir={user_data_dir}",
                "about:blank",
            ],
            # 3 and 4 are kept open too: the child sets them up in child_fds before exec.
            pass_fds=(3, 4, to_browser_read, from_browser_write),
            preexec_fn=child_fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.next_id

    def read_message(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError(
                    "Chromium closed the pipe: "
                    + self.process.stderr.read().decode(errors="replace")[-2000:]
                )
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None, timeout=30):
        call_id = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self.read_message(deadline)
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, session=None, timeout=30):
        """The first event `method` (of `session`, when given), waiting for it if need be."""

        def matches(event):
            return event.get("method") == method and (
                session is None or event.get("sessionId") == session
            )

        deadline = time.monotonic() + timeout
        for i, event in enumerate(self.events):
            if matches(event):
                return self.events.pop(i)
        while True:
            message = self.read_message(deadline)
            self.events.append(message)
            if matches(message):
                return message

    def take_events(self, session):
        """Removes and returns the events of `session` received so far."""
        taken = [e for e in self.events if e.get("sessionId") == session]
        self.events = [e for e in self.events if e.get("sessionId") != session]
        return taken

    def close(self):
        try:
            self.send("Browser.close")
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001  (closing is best effort; kill below)
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self.to_browser)
            os.close(self.from_browser)
            self.process.stderr.close()


def chromium_binary():
    """Debian's chromium, or None when it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@contextlib.contextmanager
def open_browser(binary):
    """A headless Chromium in a profile of its own, for one check or many (check's `browser`)."""
    with tempfile.TemporaryDirectory(prefix="mm-browser-") as profile:
        browser = Chromium(binary, profile)
        try:
            yield browser
        finally:
            browser.close()


def check(page, screenshot=None, browser=None):
    """The problems of `page` (a list, empty when it renders cleanly), opened in a new tab of
    `browser`, or of a Chromium started for this check alone."""
    if browser is None:
        binary = chromium_binary()
        if not binary:
            return ["chromium is not installed (scripts/setup.sh installs it)"]
        with open_browser(binary) as own:
            return check(page, screenshot, own)
    url = page.resolve().as_uri()
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.call(f"{domain}.enable", session=session)
        if screenshot:
            browser.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1100, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
        browser.call("Page.navigate", {"url": url}, session=session)
        browser.wait_for("Page.loadEventFired", session)
        result = browser.call(
            "Runtime.evaluate", {"expression": INSPECT, "returnByValue": True}, session=session
        )
        if screenshot:
            shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=session)
            pathlib.Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        # Anything logged after load (late image decoding errors) is in by now.
        browser.call("Runtime.evaluate", {"expression": "1"}, session=session)
    finally:
        try:
            browser.call("Target.closeTarget", {"targetId": target}, timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass  # A browser that died shows in the check's own error, or in the next check's.
    problems = []
    for event in browser.take_events(session):
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            problems.append(f"console {params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            problems.append(f"uncaught exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            problems.append(f"log error: {params['entry'].get('text')}")
        elif method == "Network.requestWillBeSent":
            request_url = params["request"]["url"]
            if request_url != url and not request_url.startswith("data:"):
                problems.append(f"not self-contained: the page requested {request_url}")
    info = json.loads(result["result"]["value"])
    if not info["plots"]:
        problems.append("no plot on the page")
    for plot in info["plots"]:
        if not plot["complete"] or plot["width"] == 0 or plot["height"] == 0:
            problems.append(f"plot {plot['id']} did not render ({plot['width']}x{plot['height']})")
        if plot["series"] <= 0:
            problems.append(f"plot {plot['id']} is empty (no data series)")
    if not info["tables"]:
        problems.append("no table on the page")
    for table in info["tables"]:
        if table["rows"] == 0:
            problems.append(f"table {table['id']} ({table['caption']!r}) has no rows")
    for section in SECTIONS:
        if section not in info["sections"]:
            problems.append(f"section {section!r} is missing")
    print(
        f"browser check: {page}: {len(info['plots'])} plots, {len(info['tables'])} tables, "
        f"{sum(t['rows'] for t in info['tables'])} table rows, sections "
        f"{', '.join(info['sections'])}",
        file=sys.stderr,
    )
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=pathlib.Path)
    parser.add_argument("--screenshot", type=pathlib.Path)
    args = parser.parse_args()
    if not args.page.is_file():
        print(f"browser check: no such page: {args.page}", file=sys.stderr)
        return 2
    problems = check(args.page, args.screenshot)
    for problem in problems:
        print(f"browser check: FAIL: {problem}", file=sys.stderr)
    if not problems:
        print("browser check: PASS", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
