"""Headless Chromium for tests: the DOM of a page after its scripts ran, and its visible text.

Chromium runs offline (every host name fails to resolve), the way an air-gapped site sees a page,
so a page that still needs a CDN shows it here on any machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

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
