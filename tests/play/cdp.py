"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (standard library only).

Chromium reads commands from its fd 3 and writes responses and events to its fd 4, one JSON
message per NUL-terminated chunk; no WebSocket library or driver binary is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

__all__ = ["Browser", "CDPError", "find_chromium"]

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")

# KeyboardEvent.key -> (code, Windows virtual key code, text)
KEYS = {
    "ArrowUp": ("ArrowUp", 38, None),
    "ArrowDown": ("ArrowDown", 40, None),
    "ArrowLeft": ("ArrowLeft", 37, None),
    "ArrowRight": ("ArrowRight", 39, None),
    " ": ("Space", 32, " "),
    "Enter": ("Enter", 13, "\r"),
}


class CDPError(RuntimeError):
    """A DevTools command failed or timed out, or the browser exited."""


def find_chromium() -> str | None:
    """``$ZSCEVAL_CHROMIUM`` or the first of :data:`NAMES` on ``PATH``; None when there is none."""
    env = os.environ.get("ZSCEVAL_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    return next((p for p in map(shutil.which, NAMES) if p), None)


class Browser:
    """A headless Chromium with a pipe to its DevTools endpoint.

    Args:
        exe: the Chromium executable.
        profile: an empty folder for its profile.
    """

    def __init__(self, exe: str, profile: Path) -> None:
        to_browser_r, self._w = os.pipe()
        self._r, from_browser_w = os.pipe()
        flags = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows", "--disable-extensions", "--mute-audio",
            f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
        ]  # fmt: skip
        # The pipe must be the browser's fds 3 (in) and 4 (out): let the shell place them.
        script = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self.log = open(profile / "chromium.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            ["bash", "-c", script, exe, *flags],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._results: dict[int, dict] = {}
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._closed = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._closed = True
                    self._cond.notify_all()
                return
            buf += chunk
            *messages, buf = buf.split(b"\0")
            with self._cond:
                for raw in messages:
                    msg = json.loads(raw)
                    if "id" in msg:
                        self._results[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30):
        """Run a DevTools command and return its result.

        Raises:
            CDPError: the command failed, timed out, or the browser exited.
        """
        with self._cond:
            self._next += 1
            mid = self._next
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while mid not in self._results:
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise CDPError(f"{method}: {'the browser exited' if self._closed else 'timed out'}")
                self._cond.wait(left)
            reply = self._results.pop(mid)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    # -- conveniences -----------------------------------------------------------------------------
    def open_page(self, url: str) -> tuple[str, str]:
        """Open ``url`` in a new tab; returns ``(target id, session id)``."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=session)
        self.send("Emulation.setFocusEmulationEnabled", {"enabled": True}, session=session)
        self.send("Page.bringToFront", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        return target, session

    def evaluate(self, session: str, expression: str):
        """The JSON value of a JavaScript expression in the page.

        Raises:
            CDPError: the expression threw.
        """
        out = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        if "exceptionDetails" in out:
            raise CDPError(f"{expression}: {out['exceptionDetails'].get('text')}")
        return out["result"].get("value")

    def wait_for(self, session: str, expression: str, timeout: float = 30, every: float = 0.005):
        """Poll ``expression`` until it is truthy; returns its value.

        Raises:
            CDPError: still falsy after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(session, expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"timed out waiting for {expression}")
            time.sleep(every)

    def press(self, session: str, key: str) -> None:
        """Press and release ``key`` (a :data:`KEYS` name) in the page."""
        code, vk, text = KEYS[key]
        down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = text
        self.send("Input.dispatchKeyEvent", down, session)
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": code,
                                             "windowsVirtualKeyCode": vk}, session)  # fmt: skip

    def close(self) -> None:
        """Close the browser (killed if it does not exit within 10 s)."""
        try:
            self.send("Browser.close", timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
