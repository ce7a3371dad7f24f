"""The live stream in a real Firefox (Debian's firefox-esr, headless, driven over Marionette).

Chromium is driven by the web page tests (test_web_page.py); this checks the other engine users
open the stream in, without the page: `/preview.mjpg` opened directly, as a bookmark would.
"""

import os
import socket
import time

from marionette import Firefox

ARTEFACTS = os.environ.get("SHUTTER_TEST_ARTEFACTS") or os.path.join(
    os.path.dirname(__file__), "..", "..", ".build", "test-artefacts")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_script(firefox, script, timeout=10):
    """Runs `script` until it returns something truthy; returns that (or the last falsy value)."""
    deadline = time.monotonic() + timeout
    while True:
        value = firefox.execute(script)
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def test_firefox_shows_the_stream_live(make_daemon):
    d = make_daemon(["--camera", "test-pattern", "--size", "640x480", "--fps", "30"])
    os.makedirs(os.path.join(ARTEFACTS, "firefox"), exist_ok=True)
    with Firefox(free_port()) as firefox:
        firefox.navigate(f"http://127.0.0.1:{d.port}/preview.mjpg")
        size = wait_for_script(firefox, "const i = document.images[0]; return i ? i.naturalWidth : 0;")
        assert size == 640, "Firefox decoded the stream's frames"
        image = firefox.find("img")
        shots = []
        for index in range(3):
            shots.append(firefox.screenshot(image))
            with open(os.path.join(ARTEFACTS, "firefox", f"stream-{index}.png"), "wb") as f:
                f.write(shots[-1])
            time.sleep(0.4)
        # The test pattern's counter, clock and square move every frame: a live picture differs.
        assert shots[0] != shots[1] != shots[2], "the picture did not change"
        viewers = d.json("GET", "/status")[2]["preview"]
        assert viewers["viewers"] == 1 and viewers["frames_sent"] >= 20, viewers


def test_firefox_shows_the_page_with_a_live_preview(make_daemon):
    d = make_daemon(["--camera", "test-pattern", "--size", "640x480", "--fps", "30"])
    os.makedirs(os.path.join(ARTEFACTS, "firefox"), exist_ok=True)
    with Firefox(free_port()) as firefox:
        firefox.navigate(f"http://127.0.0.1:{d.port}/")
        source = wait_for_script(
            firefox,
            "const p = document.getElementById('preview');"
            "return p && p.naturalWidth > 0 ? new URL(p.currentSrc).pathname : null;")
        assert source == "/preview.mjpg", "Firefox got the page (not the JSON index) and its live stream"
        preview = firefox.find("#preview")
        first = firefox.screenshot(preview)
        time.sleep(0.5)
        second = firefox.screenshot(preview)
        with open(os.path.join(ARTEFACTS, "firefox", "page.png"), "wb") as f:
            f.write(firefox.screenshot())
        assert first != second, "the preview on the page did not change"
