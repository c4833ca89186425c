"""A headless Chromium for tests: a tiny DevTools-protocol client.

Only the standard library: the DevTools protocol is JSON over a WebSocket, and the
WebSocket here is the RFC 6455 minimum a client needs (handshake, masked text frames out,
unmasked frames in). One ``Chromium`` process serves a whole test run (the ``chromium``
fixture of tests/conftest.py); each ``Browser`` is a page of its own in a fresh browser context
(no cookies, storage or cache of another page). Tests skip where no Chromium is installed
(Debian: ``apt-get install -y chromium``): the ``browser`` mark.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--mute-audio")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class _WebSocket:
    def __init__(self, url: str, timeout: float):
        m = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        head, self.buffer = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81])  # FIN + text
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self) -> str:
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x9, 0xA):  # ping/pong: ignore
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Chromium:
    """A headless Chromium process; ``new_page()`` opens a ``Browser`` on it."""

    def __init__(self, chromium: str, timeout: float = 90):
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)  # chromium may still be writing
        self.proc = subprocess.Popen([chromium, *FLAGS, f"--user-data-dir={self.profile.name}",
                                      "--remote-debugging-port=0", "--window-size=1400,1000", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = None
        deadline = time.time() + timeout
        while url is None and time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("chromium exited before opening its DevTools port")
            m = re.search(r"DevTools listening on (ws://[^:]+:(\d+)/\S+)", line)
            if m:
                url, self.port = m.group(1), int(m.group(2))
        if url is None:
            self.close()
            raise RuntimeError("chromium did not open a DevTools port")
        self.endpoint = _Endpoint(url, timeout)

    def new_page(self, width: int = 1400, height: int = 1000) -> Browser:
        context = self.endpoint.send("Target.createBrowserContext")["browserContextId"]
        target = self.endpoint.send("Target.createTarget", url="about:blank", browserContextId=context,
                                    width=width, height=height)["targetId"]
        return Browser(self, f"ws://127.0.0.1:{self.port}/devtools/page/{target}", target, context)

    def close(self) -> None:
        try:
            if getattr(self, "endpoint", None) is not None:
                self.endpoint.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Endpoint:
    """A DevTools connection: ``send(method, **params)`` returns the command's result."""

    def __init__(self, url: str, timeout: float):
        self.ws = _WebSocket(url, timeout)
        self.next_id = 0

    def send(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def close(self) -> None:
        self.ws.close()


class Browser:
    """A page of a ``Chromium``: ``with chromium.new_page() as b: b.open(url); b.key("ArrowRight"); b.eval("...")``."""

    def __init__(self, chromium: Chromium, url: str, target: str, context: str):
        self.chromium, self.target, self.context = chromium, target, context
        self.timeout = chromium.timeout
        self.endpoint = _Endpoint(url, self.timeout)

    def send(self, method: str, **params) -> dict:
        return self.endpoint.send(method, **params)

    def eval(self, expression: str):
        got = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"page script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def open(self, url: str) -> None:
        """Load ``url`` afresh (a page of the step viewer: until its script is up)."""
        self.send("Page.enable")
        self.send("Page.navigate", url="about:blank")
        self.send("Page.navigate", url=url)
        deadline = time.time() + self.timeout
        while self.eval("document.readyState") != "complete" or not self.eval("!!window.toym"):
            if time.time() > deadline:
                raise TimeoutError(f"{url} did not finish loading")
            time.sleep(0.05)

    def dom(self, url: str) -> str:
        """The DOM of ``url`` once loaded and its scripts ran."""
        self.open(url)
        return self.eval("'<!DOCTYPE html>\\n' + document.documentElement.outerHTML")

    def key(self, key: str, code: int, shift: bool = False) -> None:
        """A real key press (keyDown + keyUp), as the keyboard would send it."""
        mods = 8 if shift else 0
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                      nativeVirtualKeyCode=code, modifiers=mods)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = self.eval(f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
                        ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def close(self) -> None:
        try:
            self.endpoint.close()
        finally:
            self.chromium.endpoint.send("Target.closeTarget", targetId=self.target)
            self.chromium.endpoint.send("Target.disposeBrowserContext", browserContextId=self.context)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
