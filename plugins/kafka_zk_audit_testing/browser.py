"""Headless Chromium for tests: the DOM of a page after its scripts ran, its visible text, and (over the DevTools
protocol) the resources that failed to load and values measured inside the page.

Chromium runs offline (every host name fails to resolve), the way an air-gapped site sees a page,
so a page that still needs a CDN shows it here on any machine.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = ("chromium", "chromium-browser", "/usr/bin/chromium")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND",
)


def chromium() -> str | None:
    """Path of the Chromium binary, or None."""
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_chromium() -> str:
    """Chromium's path; installs it with ``scripts/install_system.sh`` first when it is missing."""
    found = chromium()
    if found:
        return found
    env = {**os.environ, "KAFKA_ZK_AUDIT_WITH_CHROMIUM": "1"}
    result = subprocess.run(["bash", str(REPO / "scripts" / "install_system.sh")], env=env,
                            capture_output=True, text=True, timeout=900)
    found = chromium()
    if not found:
        raise RuntimeError("chromium is missing and `KAFKA_ZK_AUDIT_WITH_CHROMIUM=1 bash scripts/install_system.sh` "
                           f"did not install it (exit {result.returncode}): {result.stderr[-2000:]}")
    return found


def _url(url_or_path: str | Path) -> str:
    """A file:// URL for a path; URLs pass through."""
    text = str(url_or_path)
    if "://" in text:
        return text
    return Path(text).resolve().as_uri()


def render_dom(url_or_path: str | Path, *, budget_ms: int = 5000, timeout: float = 120) -> str:
    """The serialized DOM of a page after its scripts ran (``--dump-dom``)."""
    binary = ensure_chromium()
    with tempfile.TemporaryDirectory(prefix="kza-chromium-") as profile:
        result = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom",
             _url(url_or_path)],
            capture_output=True, text=True, timeout=timeout,
        )
    if result.returncode != 0 or not result.stdout.strip():
        raise RuntimeError(f"chromium failed on {url_or_path} (exit {result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


class _TextOnly(HTMLParser):
    """Collects text outside <head>, <script>, <style>, <noscript> and <template>."""

    SKIP = {"head", "script", "style", "noscript", "template"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.parts.append(data)


def text_of(dom: str) -> str:
    """The text a reader sees in a DOM, whitespace collapsed (scripts, styles and <head> left out)."""
    parser = _TextOnly()
    parser.feed(dom)
    parser.close()
    return " ".join(" ".join(parser.parts).split())


def visible_text(url_or_path: str | Path, *, budget_ms: int = 5000, timeout: float = 120) -> str:
    """The rendered page's text, after its scripts ran."""
    return text_of(render_dom(url_or_path, budget_ms=budget_ms, timeout=timeout))


# --- the DevTools protocol over a pipe: what a page loaded, what failed, and values read inside it ---------------

@dataclass
class PageCheck:
    """What headless Chromium saw of one page: the ``expression``'s value, once the page's scripts ran, the
    resources that failed to load (URL and reason) and the errors it logged (console, exceptions, CSP)."""

    url: str
    value: Any
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Pipe:
    """One Chromium started with ``--remote-debugging-pipe``: commands on its fd 3, answers and events on its fd 4."""

    def __init__(self, binary: str, profile: str, width: int, height: int) -> None:
        to_child, self._to_browser = os.pipe()
        self._from_browser, from_child = os.pipe()

        def wire() -> None:  # in the child: the pipes as fds 3 and 4 (via free fds, either may be 3 or 4 now)
            reading, writing = os.dup(to_child), os.dup(from_child)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "--hide-scrollbars",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(3, 4), preexec_fn=wire)
        os.close(to_child)
        os.close(from_child)
        self.events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_browser, "rb", buffering=0) as stream:
            while chunk := stream.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for message in messages:
                    self._queue.put(json.loads(message))
        self._queue.put(None)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60) -> dict[str, Any]:
        """Run one command; keeps the events that arrive meanwhile in ``events``."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._take(deadline, method)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result") or {}
            self.events.append(answer)

    def wait_for(self, event: str, timeout: float = 60) -> None:
        """Wait until ``event`` arrived (or had already)."""
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == event for e in self.events):
            self.events.append(self._take(deadline, event))

    def _take(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        try:
            message = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError(f"chromium: no {waiting_for} in time") from None
        if message is None:
            raise RuntimeError(f"chromium exited while waiting for {waiting_for}")
        return message

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)


def _failures(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(resources that failed to load, errors logged) from a page's DevTools events."""
    urls = {e["params"]["requestId"]: e["params"]["request"]["url"]
            for e in events if e.get("method") == "Network.requestWillBeSent"}
    failed, errors = [], []
    for event in events:
        method, params = event.get("method"), event.get("params") or {}
        if method == "Network.loadingFailed":
            failed.append(f"{urls.get(params.get('requestId'), '?')}: {params.get('errorText')}"
                          f"{' (' + params['blockedReason'] + ')' if params.get('blockedReason') else ''}")
        elif method == "Network.responseReceived" and params["response"].get("status", 0) >= 400:
            failed.append(f"{params['response']['url']}: HTTP {params['response']['status']}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            errors.append(f"{params['entry'].get('source')}: {params['entry'].get('text')} "
                          f"{params['entry'].get('url') or ''}".strip())
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append(f"exception: {(details.get('exception') or {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
    return failed, errors


def check_page(url_or_path: str | Path, expression: str, *, width: int = 1280, height: int = 800,
               settle_ms: int = 500, timeout: float = 60) -> PageCheck:
    """Open a page in a ``width`` × ``height`` window, wait for its load event and ``settle_ms`` more (its
    scripts' ready handlers), then evaluate ``expression`` (JSON-serializable result; a Promise is awaited)."""
    binary = ensure_chromium()
    url = _url(url_or_path)
    with tempfile.TemporaryDirectory(prefix="kza-cdp-") as profile:
        pipe = _Pipe(binary, profile, width, height)
        try:
            targets = pipe.send("Target.getTargets", timeout=timeout)["targetInfos"]
            target = next(t["targetId"] for t in targets if t["type"] == "page")
            session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Network", "Runtime", "Log", "Page"):
                pipe.send(f"{domain}.enable", session=session)
            pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                             "deviceScaleFactor": 1, "mobile": False},
                      session=session)
            pipe.events.clear()
            pipe.send("Page.navigate", {"url": url}, session=session)
            pipe.wait_for("Page.loadEventFired", timeout=timeout)
            time.sleep(settle_ms / 1000)
            answer = pipe.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                    "awaitPromise": True}, session=session, timeout=timeout)
            if "exceptionDetails" in answer:
                raise RuntimeError(f"the check's expression failed on {url}: {answer['exceptionDetails']}")
            value = answer["result"].get("value")
            pipe.send("Runtime.evaluate", {"expression": "0"}, session=session)  # collect the events until now
        finally:
            pipe.close()
    failed, errors = _failures(pipe.events)
    return PageCheck(url=url, value=value, failed=failed, errors=errors)
