"""What the browser tests share: Chromium found and launched offline, a built site served on 127.0.0.1,
and every request that leaves localhost refused and recorded."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("ARCHZOO_TEST_RESULTS", REPO / "test-results")) / "browser"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


#: Material draws mermaid diagrams into a closed shadow root; this init script opens it so tests can see the SVG.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, { ...init, mode: "open" }); };
"""


def require_browser() -> None:
    """Skip (which CI=true turns into a failure) when Chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium, or `make chromium`)")
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """``folder`` served over http on 127.0.0.1 by a thread; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium() -> Iterator[object]:
    """Debian's Chromium driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def browser(site_url):
    """Chromium for one test module, launched once its ``site_url`` fixture has served the site."""
    with chromium() as launched:
        yield launched


def refuse_outside(context, site_url: str) -> list[str]:
    """Refuse every request of ``context`` that leaves the site; returns the list the refused URLs go to."""
    outside: list[str] = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(site_url):
            request_route.continue_()
        else:
            outside.append(url)
            request_route.abort()

    context.route("**/*", route)
    return outside


@dataclasses.dataclass
class Watched:
    """What a tab did that a test may forbid: requests that left the site (refused), uncaught page errors,
    dialogs (dismissed) and console messages."""

    outside: list[str]
    errors: list[str] = dataclasses.field(default_factory=list)
    dialogs: list[str] = dataclasses.field(default_factory=list)
    console: list[str] = dataclasses.field(default_factory=list)


@contextlib.contextmanager
def watched_tab(browser, site_url: str, init_script: str) -> Iterator[tuple[object, Watched]]:
    """A new tab of its own context (1400x1000) running ``init_script`` before any page script, with every
    request that leaves ``site_url`` refused; yields the tab and what it did, and closes it after."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(init_script)
    watched = Watched(outside=refuse_outside(context, site_url))
    tab = context.new_page()

    def on_dialog(dialog):
        watched.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    tab.on("dialog", on_dialog)
    tab.on("pageerror", lambda exc: watched.errors.append(str(exc)))
    tab.on("console", lambda message: watched.console.append(message.text))
    try:
        yield tab, watched
    finally:
        context.close()


def screenshot(page, name: str) -> Path:
    """A full-page screenshot under test-results/browser/, for a person to look at."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
