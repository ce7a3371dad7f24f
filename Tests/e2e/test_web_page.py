"""The web page at / in a real headless Chromium (Debian's chromium and chromium-driver packages,
driven by selenium), against the real daemon on the test pattern.

Screenshots are kept as artefacts in $SHUTTER_TEST_ARTEFACTS, or .build/test-artefacts/web/."""

import os
import pathlib
import re
import time

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

# Debian's browser and driver, named explicitly: nothing may be downloaded (selenium-manager
# would try when it has to find either by itself).
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTEFACTS = pathlib.Path(
    os.environ.get("SHUTTER_TEST_ARTEFACTS")
    or pathlib.Path(__file__).resolve().parents[2] / ".build" / "test-artefacts" / "web")

# What a browser's navigation sends (Chromium's own header).
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"


@pytest.fixture(scope="module")
def browser(request, tmp_path_factory):
    """One headless Chromium for the module (starting it is the slow part); each test loads its
    own daemon's page."""
    os.environ.setdefault("SE_OFFLINE", "true")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()
    # Said outside output capture, so it shows on a passing run too.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print(f"\nweb page screenshots: {ARTEFACTS}")


def save(browser_or_element, name):
    """Saves a screenshot artefact and returns its PNG bytes."""
    if hasattr(browser_or_element, "get_screenshot_as_png"):
        png = browser_or_element.get_screenshot_as_png()
    else:
        png = browser_or_element.screenshot_as_png
    (ARTEFACTS / name).write_bytes(png)
    return png


def wait(browser, condition, timeout=10, message=""):
    return WebDriverWait(browser, timeout, poll_frequency=0.05).until(lambda _: condition(), message)


def console_errors(browser):
    """SEVERE browser log entries since the last call (the log is drained by reading it)."""
    return [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def open_page(browser, daemon):
    # Leave the earlier test's page first: its polls of a daemon that has stopped would log
    # connection errors right up to the moment the new page replaces it.
    browser.get("about:blank")
    console_errors(browser)  # drop whatever the earlier page logged
    browser.get(f"http://127.0.0.1:{daemon.port}/")
    # Loaded and polled once: the overlay shows the camera's size.
    wait(browser, lambda: "640×480" in browser.find_element(By.ID, "mode").text,
         message="the overlay never showed the preview's size")


def type_interval(browser, seconds):
    """Types `seconds` into the Start/Stop interval field."""
    every = browser.find_element(By.ID, "every")
    every.clear()
    every.send_keys(seconds)


def thumbnail_ids(browser):
    """The gallery's picture ids in page order, read in one step (tiles come and go meanwhile)."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#gallery li')].map((item) => Number(item.dataset.id))")


def test_the_page_loads_with_no_console_errors_and_the_preview_moves(daemon, browser):
    status, headers, body = daemon.request("GET", "/", headers={"Accept": BROWSER_ACCEPT})
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    open_page(browser, daemon)
    assert browser.title == "Shutter"
    preview = browser.find_element(By.ID, "preview")
    wait(browser, lambda: browser.execute_script("return arguments[0].naturalWidth", preview) == 640,
         message="the preview never showed a frame")
    # The real stream, not the frame-by-frame fallback.
    assert browser.execute_script("return arguments[0].currentSrc", preview).endswith("/preview.mjpg")
    _, _, status = daemon.json("GET", "/status")
    assert status["preview"]["viewers"] >= 1, status
    first = save(preview, "preview-1.png")
    time.sleep(0.5)
    second = save(preview, "preview-2.png")
    assert first != second, "two screenshots of the preview half a second apart are identical"
    save(browser, "desktop.png")
    # The overlay: the clock ticks; the size is the preview's, the rate camera.state's when it says.
    clock = browser.find_element(By.ID, "clock").text
    assert clock
    wait(browser, lambda: browser.find_element(By.ID, "clock").text != clock, message="the clock stands still")
    assert re.fullmatch(r"640×480 · (live|[\d.]+ fps)", browser.find_element(By.ID, "mode").text)
    assert browser.find_element(By.ID, "rec").is_displayed() is False
    assert console_errors(browser) == []


def test_snap_adds_a_thumbnail(daemon, browser):
    open_page(browser, daemon)
    assert thumbnail_ids(browser) == []
    assert browser.find_element(By.ID, "empty").is_displayed()
    browser.find_element(By.ID, "snap").click()
    wait(browser, lambda: len(thumbnail_ids(browser)) == 1, message="no thumbnail after Snap")
    _, _, listing = daemon.json("GET", "/library")
    assert [record["id"] for record in listing["items"]] == thumbnail_ids(browser)
    image = browser.find_element(By.CSS_SELECTOR, "#gallery li img")
    assert image.get_attribute("src").endswith(f"/media/{listing['items'][0]['id']}.jpg?width=320")
    assert image.get_attribute("alt").startswith(f"Picture {listing['items'][0]['id']}")
    wait(browser, lambda: browser.execute_script("return arguments[0].naturalWidth", image) == 320,
         message="the thumbnail did not load at 320 pixels wide")
    assert not browser.find_element(By.ID, "empty").is_displayed()
    save(browser, "snap.png")
    assert console_errors(browser) == []


def test_delayed_shows_a_countdown_then_a_thumbnail(daemon, browser):
    open_page(browser, daemon)
    Select(browser.find_element(By.ID, "delay")).select_by_value("2")
    browser.find_element(By.ID, "delayed").click()
    countdown = browser.find_element(By.ID, "countdown")
    wait(browser, countdown.is_displayed, 2, "no countdown")
    assert countdown.text in ("2", "1")
    # Like the iOS sample: the other controls wait for the shot.
    for control in ("snap", "delayed", "startstop", "library-button", "delay"):
        assert not browser.find_element(By.ID, control).is_enabled(), control
    save(browser, "countdown.png")
    started = time.monotonic()
    wait(browser, lambda: len(thumbnail_ids(browser)) == 1, 8, "no thumbnail after the delayed shot")
    assert time.monotonic() - started > 0.8, "the picture came before the countdown ended"
    assert not countdown.is_displayed()
    assert browser.find_element(By.ID, "snap").is_enabled()
    _, _, record = daemon.json("GET", f"/library/{thumbnail_ids(browser)[0]}")
    assert record["job_id"] is not None, "a delayed shot is a delayed job's picture"
    _, _, job = daemon.json("GET", f"/jobs/{record['job_id']}")
    assert job["kind"] == "delayed" and job["delay"] == 2 and job["state"] == "done"
    assert console_errors(browser) == []


def test_start_then_stop_takes_pictures_until_stopped(daemon, browser):
    open_page(browser, daemon)
    type_interval(browser, "0.5")
    button = browser.find_element(By.ID, "startstop")
    button.click()
    wait(browser, lambda: button.text == "Stop", message="Start did not become Stop")
    assert button.get_attribute("aria-pressed") == "true"
    wait(browser, browser.find_element(By.ID, "rec").is_displayed, 3, "no job indicator while the job runs")
    wait(browser, lambda: len(thumbnail_ids(browser)) >= 3, 6, "the interval job's pictures did not appear")
    save(browser, "interval.png")
    button.click()
    wait(browser, lambda: button.text == "Start", message="Stop did not become Start")
    _, _, jobs = daemon.json("GET", "/jobs")
    job = jobs["items"][0]
    assert job["kind"] == "interval" and job["every"] == 0.5 and job["label"] == "web page"
    assert job["state"] == "cancelled"
    assert len(job["picture_ids"]) >= 3
    _, _, listing = daemon.json("GET", f"/library?job={job['id']}")
    assert [record["id"] for record in listing["items"]] == job["picture_ids"]
    wait(browser, lambda: set(job["picture_ids"]) <= set(thumbnail_ids(browser)), 3,
         "not every picture of the job is in the gallery")
    wait(browser, lambda: not browser.find_element(By.ID, "rec").is_displayed(), 3,
         "the job indicator stayed on after Stop")
    assert thumbnail_ids(browser) == sorted(thumbnail_ids(browser), reverse=True)
    assert console_errors(browser) == []


def test_pictures_taken_elsewhere_appear_and_the_viewer_downloads_and_deletes(daemon, browser):
    open_page(browser, daemon)
    first = daemon.snap()
    second = daemon.snap()
    wait(browser, lambda: thumbnail_ids(browser) == [second["id"], first["id"]], 4,
         "pictures taken with curl did not appear")
    browser.find_element(By.CSS_SELECTOR, f'#gallery li[data-id="{second["id"]}"] button').click()
    viewer = browser.find_element(By.ID, "viewer")
    wait(browser, viewer.is_displayed, 3, "the viewer did not open")
    full = browser.find_element(By.ID, "full")
    wait(browser, lambda: browser.execute_script("return arguments[0].naturalWidth", full) == 640,
         message="the full-size picture did not load")
    download = browser.find_element(By.ID, "download")
    assert download.get_attribute("href").endswith(f"/media/{second['id']}.jpg")
    assert download.get_attribute("download") == f"shutter-{second['id']}.jpg"
    save(browser, "viewer.png")
    browser.find_element(By.ID, "delete").click()
    alert = WebDriverWait(browser, 3).until(lambda d: d.switch_to.alert)
    assert str(second["id"]) in alert.text
    alert.accept()
    wait(browser, lambda: thumbnail_ids(browser) == [first["id"]], 3, "the deleted picture stayed")
    # The gallery follows /events, whose picture.deleted can come before the DELETE's answer
    # that closes the viewer (seen once on a loaded CI machine).
    wait(browser, lambda: not viewer.is_displayed(), 3, "the viewer stayed open after the delete")
    assert daemon.request("GET", f"/library/{second['id']}")[0] == 404
    # Deleted elsewhere: gone from the page at the next poll.
    assert daemon.request("DELETE", f"/library/{first['id']}")[0] == 204
    wait(browser, lambda: thumbnail_ids(browser) == [], 4, "a picture deleted with curl stayed")
    assert console_errors(browser) == []


def test_the_gallery_pages_as_you_scroll(daemon, browser):
    ids = [daemon.snap()["id"] for _ in range(40)]
    open_page(browser, daemon)
    wait(browser, lambda: len(thumbnail_ids(browser)) >= 36, message="the first page did not load")
    browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    wait(browser, lambda: len(thumbnail_ids(browser)) == 40, message="scrolling did not load the next page")
    assert thumbnail_ids(browser) == sorted(ids, reverse=True)
    assert console_errors(browser) == []


def test_an_api_error_is_shown_to_the_user(daemon, browser):
    open_page(browser, daemon)
    type_interval(browser, "0")
    browser.find_element(By.ID, "startstop").click()
    toast = browser.find_element(By.ID, "toast")
    wait(browser, toast.is_displayed, 3, "no message for a refused job")
    assert "every" in toast.text, toast.text
    assert browser.find_element(By.ID, "startstop").text == "Start"
    save(browser, "error.png")
    # The refused request is the only thing the console reports.
    errors = console_errors(browser)
    assert errors and all("400" in entry["message"] for entry in errors), errors


def test_the_page_fits_a_phone_screen(daemon, browser):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True})
    try:
        daemon.snap()
        open_page(browser, daemon)
        wait(browser, lambda: len(thumbnail_ids(browser)) == 1)
        assert browser.execute_script("return window.innerWidth") == 375
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 375, \
            "the page scrolls sideways on a phone"
        for control in browser.find_elements(By.CSS_SELECTOR, "#toolbar button, #toolbar select, #toolbar input"):
            assert control.is_displayed()
            rect = control.rect
            assert rect["x"] >= 0 and rect["x"] + rect["width"] <= 375, (control.get_attribute("id"), rect)
            assert rect["y"] + rect["height"] <= 812, (control.get_attribute("id"), rect)
            assert rect["height"] >= 44, (control.get_attribute("id"), "too small to tap")
        save(browser, "phone.png")
        assert console_errors(browser) == []
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def first_frame_seconds(browser, query):
    """Seconds from adding an <img> of the stream with `query` until Chromium shows its first frame."""
    started = time.monotonic()
    browser.execute_script("""
        document.getElementById("slow")?.remove();
        const slow = document.createElement("img");
        slow.id = "slow";
        slow.style = "position: fixed; top: 0; left: 0; width: 320px; z-index: 99";
        slow.src = "/preview.mjpg?" + arguments[0];
        document.body.append(slow);""", query)
    wait(browser, lambda: browser.execute_script("return document.getElementById('slow').naturalWidth > 0"),
         timeout=10, message="Chromium never showed the stream")
    return time.monotonic() - started


def test_chromium_shows_each_frame_when_it_arrives_not_one_late(daemon, browser):
    # One frame every 2 s. Chromium shows a part only once it has the next part's headers
    # (crbug.com/527446): the daemon sends them in advance to browsers, so the first frame
    # shows at once; without them it shows only when the second frame arrives 1.5 to 2 s later.
    open_page(browser, daemon)
    assert first_frame_seconds(browser, "fps=0.5") < 1.0
    slow = browser.find_element(By.ID, "slow")
    first = save(slow, "stream-slow-1.png")
    started = time.monotonic()
    wait(browser, lambda: slow.screenshot_as_png != first, timeout=8,
         message="the second frame never replaced the first")
    assert time.monotonic() - started > 0.5, "frames came faster than the fps cap"
    save(slow, "stream-slow-2.png")
    # The same stream without the advance headers: Chromium is one frame late, as it would be
    # with any server that sends a part's headers only with its frame.
    assert first_frame_seconds(browser, "fps=0.5&advance_headers=false") > 1.2


def test_the_page_works_behind_tokens_with_the_browsers_credentials(make_daemon, browser, tmp_path):
    """With tokens, a browser's first visit gets the login prompt (401, Basic); once it has the
    credentials the page, the stream, Snap and the thumbnails all work, same-origin."""
    token = "page-admin-token-0123456789"
    tokens = tmp_path / "tokens"
    tokens.write_text(f"admin {token}\n")
    d = make_daemon(["--auth-tokens", str(tokens), "--size", "640x480", "--fps", "30"])
    status, headers, _ = d.request("GET", "/", headers={"Accept": BROWSER_ACCEPT})
    assert status == 401 and "Basic realm=" in headers["www-authenticate"]
    # What the browser sends once its user answered the prompt (any name, the token as password).
    import base64
    basic = "Basic " + base64.b64encode(f"me:{token}".encode()).decode()
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": basic}})
    try:
        open_page(browser, d)
        preview = browser.find_element(By.ID, "preview")
        wait(browser, lambda: browser.execute_script("return arguments[0].naturalWidth", preview) == 640,
             message="the preview never showed a frame behind tokens")
        browser.find_element(By.ID, "snap").click()
        wait(browser, lambda: len(thumbnail_ids(browser)) == 1, message="Snap did not work behind tokens")
        image = browser.find_element(By.CSS_SELECTOR, "#gallery li img")
        wait(browser, lambda: browser.execute_script("return arguments[0].naturalWidth", image) == 320,
             message="the thumbnail did not load behind tokens")
        assert console_errors(browser) == []
    finally:
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
