"""Headless Chromium driven over the DevTools protocol on a pipe: open a page, evaluate JavaScript, screenshot.

Why a pipe and not a test framework: Debian's /usr/bin/chromium speaks the DevTools protocol on file
descriptors 3 and 4 (``--remote-debugging-pipe``), so the tests need no browser download, no websocket
library and no network port. The flags are the ones that work on this machine's closed network.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--remote-debugging-pipe",
)


class Browser:
    """One Chromium process and one page (tab) of a fixed viewport size."""

    def __init__(self, width: int = 1400, height: int = 2000, timeout: float = 60.0) -> None:
        self.width, self.height, self.timeout = width, height, timeout
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # the child reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [str(CHROMIUM), *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._id, self._buf = 0, b""
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def _send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buf:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"chromium did not answer {method} in {self.timeout:.0f} s")
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium exited ({self.proc.poll()}) during {method}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def call(self, method: str, params: dict | None = None) -> dict:
        return self._send(method, params, self.session)

    def open(self, url: str) -> None:
        """Navigate and wait until the page and its scripts have run (document.readyState complete)."""
        self.call("Page.enable")
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout
        while self.eval("document.readyState") != "complete" or self.eval("location.href") == "about:blank":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            time.sleep(0.05)

    def eval(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        res = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression[:80]}...: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", params)["data"]))
        return path

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
