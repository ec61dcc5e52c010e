"""Chromium from the system packages, driven by Playwright, for the report's browser tests.

The browser is Debian's ``chromium`` (``make browser`` installs it); Playwright never downloads
one here. When either is missing the tests are skipped and say why.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def skip_reason() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (make install adds it)"
    if chromium_path() is None:
        return "no chromium on PATH (make browser installs Debian's chromium)"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless system Chromium for the whole module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class ConsoleErrors(list[str]):
    """Console errors and uncaught exceptions of one page."""

    def watch(self, page: Any) -> Any:
        page.on("console", lambda m: self.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.append(str(e)))
        return page


requires_browser = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
