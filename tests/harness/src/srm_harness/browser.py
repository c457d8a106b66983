"""A headless Chromium driven over its DevTools pipe (``--remote-debugging-pipe``: JSON
messages ended by a NUL byte, read from file descriptor 3 and written to 4), so a test
can time a page load in wall-clock time (``--dump-dom``'s virtual time cannot) with no
package beyond Chromium.

    with Browser(CHROMIUM) as browser:
        seconds = browser.load(url, until="document.body.dataset.loaded === 'true'")
        html = browser.evaluate("document.documentElement.outerHTML")
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from typing import Any


class Browser:
    def __init__(self, chromium: str, *, width: int = 1280, height: int = 1500) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Above 4, so that moving them to 3 and 4 in the child clobbers neither.
        high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def wire() -> None:
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._process = subprocess.Popen(
            [
                chromium,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--remote-debugging-pipe",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # noqa: PLW1509 - the child only moves two descriptors
            pass_fds=(3, 4),
        )
        os.close(high_r)
        os.close(high_w)
        self._buffer = b""
        self._next = 0
        self._session: str | None = None

    def __enter__(self) -> Browser:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        return self

    def __exit__(self, *_exc: object) -> None:
        self._process.kill()
        self._process.wait(10)
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command (to the page once attached) and wait for its answer."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def load(self, url: str, *, until: str, timeout: float = 60.0) -> float:
        """Navigate to ``url``; the wall-clock seconds until ``until`` is true in it."""
        started = time.perf_counter()
        self.call("Page.navigate", url=url)
        while time.perf_counter() - started < timeout:
            if self.evaluate(f"Boolean(document.body && ({until}))"):
                return time.perf_counter() - started
            time.sleep(0.02)
        raise TimeoutError(f"{url}: not {until} after {timeout:.0f} s")

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)
