"""Headless Chromium driven through the DevTools protocol: load a page, read its text, click its
buttons and type into its inputs as a user would (the page's own event handlers run)."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import numpy as np
import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")

ROW = """(label => { let e = [...document.querySelectorAll('*')].find(x => x.childElementCount == 0 && x.textContent.trim() == label);
  while (e && !e.querySelector('input, button')) e = e.parentElement; return e; })"""
"""JS: the smallest element around the widget labelled `label` (viser draws label and input side by side)."""


def browser() -> str:
    found = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if found is None:
        pytest.fail("the browser viewer tests need headless Chromium: apt-get install chromium (.ci/run does)")
    return found


def chromium_args(*extra: str) -> list[str]:
    """WebGL in software (SwiftShader): there is no GPU."""
    return [browser(), "--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
            "--window-size=1280,960", *extra]  # fmt: skip


class Page:
    def __init__(self, profile):
        from websockets.sync.client import connect

        # Chromium's singleton socket folder (org.chromium.Chromium.*) goes in a short-lived TMPDIR of its
        # own, removed on close (under the test's long tmp_path the socket's path is too long for Unix)
        self._tmp = tempfile.mkdtemp(prefix="rl-chromium-")
        self._chrome = subprocess.Popen(chromium_args("--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "TMPDIR": self._tmp})  # fmt: skip
        for line in self._chrome.stderr:
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                break
        else:
            raise RuntimeError("chromium did not start its DevTools server")
        pages = json.load(urllib.request.urlopen(f"http://127.0.0.1:{found.group(1)}/json/list", timeout=30))
        self._ws = connect(next(p["webSocketDebuggerUrl"] for p in pages if p["type"] == "page"), max_size=None)
        self._id = 0

    def call(self, method: str, **params) -> dict:
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv(timeout=60))
            if message.get("id") == self._id:
                return message.get("result", message)

    def js(self, expression: str):
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True).get("result", {}).get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        return self.js("document.body ? document.body.innerText : ''") or ""

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match:
        """The first match of the regular expression `pattern` in the page's text, once there is one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(pattern, self.text())
            if found:
                return found
            time.sleep(0.25)
        raise AssertionError(f"'{pattern}' never appeared; the page says:\n{self.text()[:3000]}")

    def click(self, text: str) -> None:
        """The visible button whose text is `text`."""
        clicked = self.js(f"""(() => {{ const b = [...document.querySelectorAll('button')]
            .find(b => b.innerText.trim() == {json.dumps(text)} && b.offsetParent !== null);
            if (b) b.click(); return !!b; }})()""")
        assert clicked, f"no button '{text}' on the page"

    def toggle(self, label: str) -> None:
        """The checkbox labelled `label`."""
        assert self.js(f"(() => {{ const r = {ROW}({json.dumps(label)}); const c = r && r.querySelector('input[type=checkbox]');"
                       f" if (c) c.click(); return !!c; }})()"), f"no checkbox '{label}'"  # fmt: skip

    def type_after(self, label: str, nth: int, value: str) -> None:
        """Type `value` (then Enter) into the `nth` text input after the widget labelled `label`."""
        typed = self.js(f"""(() => {{ const all = [...document.querySelectorAll('input')];
            const r = {ROW}({json.dumps(label)}); if (!r) return false;
            const i = all.slice(all.indexOf(r.querySelector('input'))).filter(i => i.type == 'text')[{nth}];
            if (!i) return false;
            const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
            i.focus(); set.call(i, {json.dumps(value)}); i.dispatchEvent(new Event('input', {{bubbles: true}}));
            i.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter', bubbles: true}})); i.blur(); return true; }})()""")
        assert typed, f"no input {nth} after '{label}'"

    def screenshot(self) -> np.ndarray:
        """The page as drawn now, [height, width, 3] RGB."""
        from PIL import Image

        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)

    def close(self) -> None:
        self._ws.close()
        self._chrome.terminate()
        self._chrome.wait(timeout=30)
        shutil.rmtree(self._tmp, ignore_errors=True)
