"""What the browser tests share: Debian's Chromium under Playwright, and a portal served by
waitress on a free local port that stops cleanly."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from flask import Flask
from playwright.sync_api import Browser, sync_playwright
from waitress.server import create_server

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-background-networking"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail("Chromium is not installed: apt-get install -y chromium")
    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=LAUNCH_ARGS,
        )
        yield b
        b.close()


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """``app`` under waitress in a thread; yields its base URL.

    Closing waitress from another thread can interrupt its loop in ``select`` on a socket just
    closed (EBADF); once we are stopping, that is the expected end of the loop, not an error.
    """
    server = create_server(app, host="127.0.0.1", port=0, threads=4)
    stopping = threading.Event()

    def run() -> None:
        try:
            server.run()
        except (OSError, ValueError):
            if not stopping.is_set():
                raise

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        stopping.set()
        server.close()
        thread.join(timeout=10)
