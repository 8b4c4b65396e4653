"""A headless Chromium (Debian's ``chromium`` package) driven over the DevTools protocol with a
tiny websocket client: open a URL, wait until the page shows some text, read the text, save a
screenshot (``is_png`` checks one). Streamlit renders in the browser, so the text only exists
after its websocket has run the script: this is what an operator sees. ``record_requests()`` keeps
the URL of every request the page makes (DevTools ``Network`` events), to prove it made none to
another host."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket

from tests.support import answers_ok


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,1000",
         "--hide-scrollbars"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
"""The eight bytes every PNG file starts with."""


def dashboard_healthy(port: int) -> bool:
    """Whether a dashboard answers its health check on ``port``."""
    return answers_ok(f"http://127.0.0.1:{port}/_stcore/health")


def wait_for_dashboard(port: int, process: subprocess.Popen | None = None, timeout: float = 60.0) -> None:
    """Until the dashboard on ``port`` answers its health check; fails when ``process`` exits first."""
    deadline = time.monotonic() + timeout
    while not dashboard_healthy(port):
        returncode = process.poll() if process is not None else None
        assert returncode is None and time.monotonic() < deadline, (
            f"the dashboard did not answer its health check on port {port}"
            + (f" (it exited with {returncode})" if returncode is not None else ""))
        time.sleep(0.5)


def is_png(path: Path) -> bool:
    """Whether ``path`` is a non-empty PNG image: the PNG signature, then its IHDR header chunk
    with a width and height above zero."""
    if not path.is_file():
        return False
    head = path.read_bytes()[:24]
    if len(head) < 24 or not head.startswith(PNG_SIGNATURE) or head[12:16] != b"IHDR":
        return False
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return width > 0 and height > 0


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    def __init__(self, debugging_port: int) -> None:
        self._profile = tempfile.mkdtemp(prefix="kpulse-chromium-")
        binary = chromium_path()
        if binary is None:
            raise RuntimeError("chromium is not installed (scripts/setup.sh installs it with KPULSE_WITH_BROWSER=1)")
        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", f"--remote-debugging-port={debugging_port}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._ids = itertools.count(1)
        self.requests: list[str] = []
        """URLs the page requested since :meth:`record_requests` (read as replies to calls arrive)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{debugging_port}/json/list", timeout=2) as answer:
                    targets = json.load(answer)
                page = next(t for t in targets if t.get("type") == "page")
                break
            except (OSError, StopIteration, ValueError):
                if time.monotonic() > deadline or self._process.poll() is not None:
                    self.close()
                    raise RuntimeError("chromium did not open its DevTools endpoint") from None
                time.sleep(0.3)
        self._ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self._call("Page.enable")
        self._call("Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1, mobile=False)

    def _call(self, method: str, **params):
        call_id = next(self._ids)
        self._ws.send(json.dumps({"id": call_id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("method") == "Network.requestWillBeSent":
                self.requests.append(message["params"]["request"]["url"])
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def record_requests(self) -> None:
        """From now on, keep every requested URL in :attr:`requests` (cache off: every load is seen)."""
        self._call("Network.enable")
        self._call("Network.setCacheDisabled", cacheDisabled=True)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page."""
        return self._call("Runtime.evaluate", expression=expression, returnByValue=True).get("result", {}).get("value")

    def open(self, url: str) -> None:
        self._call("Page.navigate", url=url)

    def type_into(self, label: str, text: str) -> None:
        """Focus the input labelled ``label``, select its text and type ``text`` over it."""
        found = self.evaluate(f"(() => {{ const e = document.querySelector('input[aria-label={json.dumps(label)}]');"
                              " if (!e) return false; e.focus(); e.select(); return true; })()")
        if not found:
            raise AssertionError(f"no input {label!r} on the page")
        self._call("Input.insertText", text=text)

    def press_enter(self) -> None:
        for kind in ("keyDown", "keyUp"):
            self._call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter", windowsVirtualKeyCode=13)

    def text(self) -> str:
        result = self._call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                            returnByValue=True)
        return result.get("result", {}).get("value") or ""

    def viewport(self, width: int, height: int) -> None:
        """Lay pages out at ``width`` x ``height`` CSS pixels (1400 x 1000 until then): a wide table's
        last columns are drawn, hence in :meth:`tables`, only when they fit."""
        self._call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                   mobile=False)

    def tables(self) -> list[list[list[str]]]:
        """Every ``st.dataframe`` on the page as rows of cell texts, the header row first. The grid
        draws on a canvas (its cells are not page text); these are the cells of the table it keeps
        for screen readers, as shown (formatted numbers, ``""`` for a missing value), only the rows
        and columns in view (:meth:`viewport`)."""
        return self.evaluate(
            "Array.from(document.querySelectorAll('[data-testid=stDataFrame] table')).map(t =>"
            " Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.querySelectorAll('th, td'))"
            ".map(c => c.innerText)))") or []

    def wait_for(self, texts: list[str], timeout: float = 60, settle: float = 1.0) -> str:
        """The page's text once it contains every one of ``texts`` (and has settled ``settle`` s);
        ``AssertionError`` naming what is missing after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            missing = [t for t in texts if t not in text]
            if not missing and "Running..." not in text:
                time.sleep(settle)
                return self.text()
            if time.monotonic() > deadline:
                raise AssertionError(f"page never showed {missing}; it shows:\n{text[:3000]}")
            time.sleep(0.5)

    def screenshot(self, path: Path) -> None:
        data = self._call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._ws.close()
        except Exception:  # noqa: BLE001 - closing after a failure
            pass
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
        shutil.rmtree(self._profile, ignore_errors=True)
