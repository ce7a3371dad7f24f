"""The change feed against the real daemon: GET /events (server-sent events) read on raw sockets,
replay after a reconnect and after kill -9, reset when too far behind, the types filter, the
keep-alive, a stalled reader, the long-polls, and a polling script's view of the library."""

import http.client
import json
import signal
import socket
import threading
import time

import pytest

from event_stream import EventStream

TEST_PATTERN = ["--camera", "test-pattern", "--size", "640x480", "--fps", "60"]


def open_stream(d, path="/events", headers=None, **kwargs):
    stream = EventStream(d.port, path, headers, **kwargs)
    status, response_headers = stream.head()
    assert status == 200, (status, stream.buffer)
    assert response_headers["content-type"] == "text/event-stream; charset=utf-8"
    return stream


def snap(d, label=None):
    body = json.dumps({"label": label}) if label else None
    status, _, record = d.json("POST", "/snap", body=body)
    assert status == 201, record
    return record


def all_pictures(port):
    """Every picture id the library lists, following `next` (standard library only)."""
    ids = []
    path = "/library?limit=500"
    while path:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", path)
        page = json.loads(conn.getresponse().read())
        conn.close()
        ids += [item["id"] for item in page["items"]]
        path = page["next"]
    return ids


def test_events_arrive_in_order_framed_as_server_sent_events(make_daemon):
    d = make_daemon(TEST_PATTERN)
    before = snap(d)  # before the stream: not sent to a stream without Last-Event-ID
    stream = open_stream(d)
    try:
        first, second = snap(d), snap(d)
        assert d.request("PATCH", f"/library/{first['id']}", body=json.dumps({"keep": True}))[0] == 200
        assert d.request("DELETE", f"/library/{second['id']}")[0] == 204
        events = stream.events(4)
        assert [e["event"] for e in events] == ["picture.created", "picture.created", "picture.updated",
                                                "picture.deleted"]
        ids = [e["id"] for e in events]
        assert ids == sorted(ids) and len(set(ids)) == 4
        # The record exactly as the library shows it.
        assert events[0]["data"] == first
        assert events[1]["data"] == second
        assert events[2]["data"]["keep"] is True and events[2]["data"]["id"] == first["id"]
        assert events[3]["data"] == {"id": second["id"], "reason": "request", "taken_at": second["taken_at"]}
        assert all(e["data"].get("id") != before["id"] for e in events)
        # The bytes on the wire: the retry hint, then id, event, data and a blank line.
        assert stream.raw.startswith(b"retry: 1000\n\n" + f"id: {ids[0]}\nevent: picture.created\ndata: {{".encode())
    finally:
        stream.close()


def test_replay_after_a_reconnect_and_after_kill_9_and_a_restart(make_daemon, tmp_path):
    d = make_daemon(TEST_PATTERN)
    # Pictures only, throughout: the camera's state changes (it starts for the first snap) would
    # otherwise come between them, in an order the test does not choose.
    pictures = "/events?types=picture.created"
    stream = open_stream(d, path=pictures)
    snap(d)
    seen = stream.next_event()["id"]
    stream.close()
    missed = [snap(d)["id"], snap(d)["id"]]
    # The header, as EventSource sends it when it reconnects.
    stream = open_stream(d, path=pictures, headers={"Last-Event-ID": str(seen)})
    replayed = stream.events(2)
    assert [e["data"]["id"] for e in replayed] == missed
    live = snap(d)
    assert stream.next_event()["data"]["id"] == live["id"]
    last = replayed[-1]["id"] + 1
    stream.close()
    # The query parameter does the same.
    stream = open_stream(d, path=f"{pictures}&last_event_id={seen}")
    assert [e["data"]["id"] for e in stream.events(3)] == missed + [live["id"]]
    stream.close()

    # kill -9, then a restart on the same data directory: the history survives, ids go on.
    after_kill = [snap(d)["id"]]
    d.process.send_signal(signal.SIGKILL)
    d.process.wait(10)
    d2 = make_daemon(TEST_PATTERN, data_dir=tmp_path / "data")
    after_kill.append(snap(d2)["id"])
    # The restarted camera says it is streaming; this client wants the pictures only.
    stream = open_stream(d2, path=pictures, headers={"Last-Event-ID": str(last)})
    replayed = stream.events(2)
    assert [e["data"]["id"] for e in replayed] == after_kill
    assert replayed[0]["id"] > last
    stream.close()


def test_a_client_behind_the_kept_history_gets_one_reset_then_live_events(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--outbox-max-events", "3"])
    stream = open_stream(d)
    snap(d)
    cursor = stream.next_event()["id"]
    stream.close()
    for _ in range(8):
        snap(d)
    stream = open_stream(d, headers={"Last-Event-ID": str(cursor)})
    reset = stream.next_event()
    assert reset["event"] == "reset"
    assert reset["data"] == {"reason": "history_pruned", "latest_id": reset["id"], "relist": "/library"}
    assert reset["id"] >= cursor + 8
    live = snap(d)
    event = stream.next_event()
    assert (event["event"], event["data"]["id"]) == ("picture.created", live["id"])
    assert event["id"] == reset["id"] + 1
    stream.close()
    # A cursor this data directory never gave is a reset too.
    stream = open_stream(d, headers={"Last-Event-ID": "999999"})
    assert stream.next_event()["event"] == "reset"
    stream.close()


def test_the_types_filter_and_unknown_types(make_daemon):
    d = make_daemon(TEST_PATTERN)
    stream = open_stream(d, path="/events?types=job.ended,picture.deleted")
    try:
        picture = snap(d)
        status, _, job = d.json("POST", "/jobs", body=json.dumps({"kind": "burst", "count": 2}))
        assert status == 201, job
        event = stream.next_event()
        assert event["event"] == "job.ended" and event["data"]["id"] == job["id"]
        assert d.request("DELETE", f"/library/{picture['id']}")[0] == 204
        event = stream.next_event()
        assert event["event"] == "picture.deleted" and event["data"]["id"] == picture["id"]
    finally:
        stream.close()
    status, headers, body = d.json("GET", "/events?types=picture.created,picture.eaten")
    assert status == 400 and headers["content-type"] == "application/json"
    assert "picture.eaten" in body["detail"]
    status, _, body = d.json("GET", "/events", headers={"Last-Event-ID": "yesterday"})
    assert status == 400, body


def test_events_over_https(make_daemon, tmp_path):
    import ssl
    import subprocess
    from test_tls import make_certificate

    cert, key = make_certificate(str(tmp_path), "events", 1)
    d = make_daemon([*TEST_PATTERN, "--tls-cert", cert, "--tls-key", key])
    # Only pictures: the camera's own state changes (it starts for the snap) may come first.
    stream = EventStream(d.port, path="/events?types=picture.created",
                         tls=ssl.create_default_context(cafile=cert))
    status, headers = stream.head()
    assert status == 200 and headers["content-type"] == "text/event-stream; charset=utf-8"
    out = subprocess.run(["curl", "-sf", "--cacert", cert, "-X", "POST", f"https://127.0.0.1:{d.port}/snap"],
                         capture_output=True, check=True, timeout=10)
    event = stream.next_event()
    assert event["event"] == "picture.created" and event["data"] == json.loads(out.stdout)
    stream.close()


def test_the_openapi_document_names_the_event_types_the_server_knows(make_daemon):
    d = make_daemon(TEST_PATTERN)
    _, _, document = d.json("GET", "/openapi.json")
    validator = pytest.importorskip("openapi_spec_validator")
    validator.validate(document)
    _, _, body = d.json("GET", "/events?types=nothing")
    known = body["detail"].split("known: ")[1].split(", ")
    documented = document["components"]["schemas"]["ServerSentEvent"]["properties"]["event"]["enum"]
    assert documented == known + ["reset"]


def test_a_long_replay_and_a_slow_reader_get_every_event_in_order(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--preview-stall-timeout-ms", "30000"])
    slow = EventStream(d.port, rcvbuf=4096)
    assert slow.head()[0] == 200
    status, _, job = d.json("POST", "/jobs", body=json.dumps({"kind": "burst", "count": 300,
                                                                "label": "y" * 200}))
    assert status == 201, job
    # The slow reader reads nothing for a while as the burst runs: more than its queue's 256
    # events pile up, so it reads the history instead, and loses nothing.
    d.wait_for_log("event stream fell behind; reading the history", timeout=20)
    ids = []
    while True:
        event = slow.next_event()
        ids.append(event["id"])
        if event["event"] == "job.ended":
            break
    slow.close()
    # Every event after the stream opened arrived, none twice (the camera's first `streaming`
    # may come before or after the stream opens: either way the ids are contiguous).
    assert ids == list(range(ids[0], ids[0] + len(ids))), "a gap or a repeat"
    assert len(ids) >= 302  # job.created, 300 pictures, job.ended, and the job's updates
    # The whole history again from the start: several pages of 128, the same events.
    replay = open_stream(d, headers={"Last-Event-ID": str(ids[0] - 1)})
    replayed = [replay.next_event()["id"] for _ in ids]
    replay.close()
    assert replayed == ids


def test_a_silent_stream_gets_a_comment_every_keep_alive_interval(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--event-keep-alive-ms", "300"])
    # Only an event that never comes here: the camera's own state changes (the test pattern
    # opening after the stream does, on a loaded machine) would otherwise come between comments.
    stream = open_stream(d, "/events?types=job.ended")
    started = time.monotonic()
    comments = [stream.next_event(keep_comments=True) for _ in range(3)]
    elapsed = time.monotonic() - started
    assert comments == [{"comment": "keep-alive"}] * 3
    # About 300 ms apart, checked on the loop's 250 ms tick.
    assert 0.6 <= elapsed <= 2.5, elapsed
    stream.close()


def test_a_stalled_reader_is_dropped_while_another_keeps_receiving(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--preview-stall-timeout-ms", "1000"])
    stalled = EventStream(d.port, rcvbuf=4096)
    reader = open_stream(d)
    try:
        label = "x" * 200  # bigger events fill the stalled socket sooner
        status, _, job = d.json("POST", "/jobs", body=json.dumps({"kind": "burst", "count": 400,
                                                                    "label": label}))
        assert status == 201, job
        received = 0
        while True:
            event = reader.next_event()
            received += event["event"] == "picture.created"
            if event["event"] == "job.ended":
                break
        assert received == 400
        d.wait_for_log("client stopped reading", timeout=15)
        # The stalled one was closed by the server: what it has buffered, then the end.
        stalled.sock.settimeout(5)
        with pytest.raises((EOFError, ConnectionResetError)):
            while True:
                stalled._fill()
        # The other reader still receives.
        live = snap(d)
        event = reader.next_event()
        while event["event"] != "picture.created":
            event = reader.next_event()
        assert event["data"]["id"] == live["id"]
    finally:
        stalled.close()
        reader.close()


def test_event_streams_beyond_the_limit_are_refused_with_503(make_daemon):
    # A client's FIN may be a half-close by a client that still reads, so a stream ends when a
    # write to it fails (or at once on a reset): the keep-alive comment is that write here.
    d = make_daemon([*TEST_PATTERN, "--max-event-streams", "2", "--event-keep-alive-ms", "300"])
    streams = [open_stream(d), open_stream(d)]
    status, headers, body = d.json("GET", "/events")
    assert status == 503 and "max_event_streams" in body["detail"]
    streams[0].close()
    # The server notices the close on its own; then a new stream fits.
    deadline = time.monotonic() + 5
    while True:
        stream = EventStream(d.port)
        status, _ = stream.head()
        stream.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert status == 200
    streams[1].close()


def test_a_long_poll_wakes_within_100_ms_of_a_snap(make_daemon):
    d = make_daemon(TEST_PATTERN)
    newest = snap(d)
    # Something newer exists: answered at once.
    started = time.monotonic()
    status, _, page = d.json("GET", f"/library?after={newest['id'] - 1}&wait=30")
    assert status == 200 and [i["id"] for i in page["items"]] == [newest["id"]]
    assert time.monotonic() - started < 0.5
    # Nothing newer: the wait ends with the usual empty page.
    started = time.monotonic()
    status, _, page = d.json("GET", f"/library?after={newest['id']}&wait=1")
    assert status == 200 and page == {"items": [], "next": None}
    assert 0.9 <= time.monotonic() - started < 2.0
    # Woken by a snap.
    for _ in range(5):
        answer = {}

        def poll():
            answer["page"] = d.json("GET", f"/library?after={newest['id']}&wait=30")[2]
            answer["at"] = time.monotonic()

        poller = threading.Thread(target=poll)
        poller.start()
        time.sleep(0.3)  # the poll is waiting
        taken = snap(d)
        snapped_at = time.monotonic()
        poller.join(10)
        assert [i["id"] for i in answer["page"]["items"]] == [taken["id"]]
        # The picture is committed before the snap is answered, so the poll may even answer first.
        assert answer["at"] - snapped_at < 0.1, answer["at"] - snapped_at
        newest = taken
    assert d.json("GET", f"/library?after=0&wait=301")[0] == 400
    assert d.json("GET", "/library?wait=5")[0] == 400


def test_a_job_long_poll_answers_when_its_state_changes(make_daemon):
    d = make_daemon(TEST_PATTERN)
    status, _, job = d.json("POST", "/jobs", body=json.dumps({"kind": "delayed", "delay": 1}))
    assert status == 201, job
    started = time.monotonic()
    status, _, waited = d.json("GET", f"/jobs/{job['id']}?wait=30&state_not=scheduled")
    assert status == 200 and waited["state"] != "scheduled"
    assert 0.5 < time.monotonic() - started < 3
    if waited["state"] == "running":
        status, _, waited = d.json("GET", f"/jobs/{job['id']}?wait=30&state_not=running")
        assert waited["state"] == "done"
    # Without state_not: the next change of the state it has when asked. A job that stays running
    # until it is cancelled, so the change comes when the test makes it (waiting on the delayed
    # job's "running" raced its end: done before the wait was asked, it waited out all 30 s).
    status, _, interval = d.json(
        "POST", "/jobs", body=json.dumps({"kind": "interval", "every": 60, "count": 10}))
    assert status == 201, interval
    status, _, interval = d.json("GET", f"/jobs/{interval['id']}?wait=10&state_not=scheduled")
    assert status == 200 and interval["state"] == "running", interval
    answers = []
    waiting = threading.Thread(
        target=lambda: answers.append(d.json("GET", f"/jobs/{interval['id']}?wait=30")))
    waiting.start()
    time.sleep(0.5)
    cancelled_at = time.monotonic()
    assert d.json("DELETE", f"/jobs/{interval['id']}")[0] == 200
    waiting.join(10)
    assert answers and answers[0][0] == 200 and answers[0][2]["state"] == "cancelled", answers
    assert time.monotonic() - cancelled_at < 3
    # Nothing changes: the job as it is after the wait.
    started = time.monotonic()
    status, _, same = d.json("GET", f"/jobs/{job['id']}?wait=1&state_not={waited['state']}")
    assert status == 200 and same["state"] == waited["state"] and time.monotonic() - started >= 0.9
    assert d.json("GET", f"/jobs/{job['id']}?wait=1&state_not=asleep")[0] == 400


def test_sigterm_answers_waiting_long_polls_at_once_instead_of_holding_the_shutdown(make_daemon):
    d = make_daemon(TEST_PATTERN)
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(d.json("GET", "/library?after=0&wait=300")))
    waiting.start()
    stream = open_stream(d)
    time.sleep(0.5)  # the long-poll is waiting
    started = time.monotonic()
    assert d.stop() == 0
    assert time.monotonic() - started < 3, "the shutdown waited for the long-poll"
    waiting.join(5)
    status, _, page = answers[0]
    assert status == 200 and page == {"items": [], "next": None}
    with pytest.raises((EOFError, ConnectionResetError)):
        while True:
            stream.next_event(keep_comments=True)


def test_long_polls_beyond_the_limit_are_refused_with_503(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--max-long-polls", "1"])
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(d.json("GET", "/library?after=0&wait=3")[0]))
    waiting.start()
    time.sleep(0.5)  # the first is waiting
    status, headers, body = d.json("GET", "/library?after=0&wait=1")
    assert status == 503 and "max_long_polls" in body["detail"] and headers["retry-after"] == "1"
    # Without wait= a listing needs no slot.
    assert d.json("GET", "/library?after=0")[0] == 200
    waiting.join(10)
    assert answers == [200]


class PollingScript:
    """What a script written with the standard library sees: it lists the library with `after`
    cursors and follows /events (reconnecting with Last-Event-ID, re-listing on reset), keeping
    the set of pictures that exist."""

    def __init__(self, port_of):
        self.port_of = port_of  # the daemon's port may change across restarts
        self.existing = set()
        self.created_events = []  # every picture.created id received, to find repeats
        self.cursor = 0  # the `after` cursor
        self.last_event_id = None
        self.stopping = threading.Event()
        self.resets = 0
        self.errors = []

    def list_after(self):
        port = self.port_of()
        path = f"/library?after={self.cursor}&limit=500"
        while path:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", path)
            page = json.loads(conn.getresponse().read())
            conn.close()
            for item in page["items"]:
                self.existing.add(item["id"])
                self.cursor = max(self.cursor, item["id"])
            path = page["next"]

    def relist(self):
        self.existing = set(all_pictures(self.port_of()))
        self.cursor = max(self.existing, default=self.cursor)

    def run(self):
        while not self.stopping.is_set():
            try:
                headers = {"Last-Event-ID": str(self.last_event_id)} if self.last_event_id else {}
                stream = EventStream(self.port_of(), headers=headers, timeout=0.5)
                status, _ = stream.head()
                assert status == 200
                if self.last_event_id is None:
                    # First connection: the listing after the stream is open, so nothing falls between.
                    self.list_after()
                while not self.stopping.is_set():
                    try:
                        event = stream.next_event()
                    except socket.timeout:
                        continue
                    self.apply(event)
            except (OSError, EOFError, AssertionError, http.client.HTTPException) as error:
                # The daemon is restarting: try again shortly, with the cursor.
                if not isinstance(error, (ConnectionRefusedError, EOFError, ConnectionResetError)):
                    self.errors.append(repr(error))
                time.sleep(0.05)

    def apply(self, event):
        self.last_event_id = event["id"]
        if event["event"] == "reset":
            self.resets += 1
            self.relist()
        elif event["event"] == "picture.created":
            self.created_events.append(event["data"]["id"])
            self.existing.add(event["data"]["id"])
            self.cursor = max(self.cursor, event["data"]["id"])
        elif event["event"] == "picture.deleted":
            self.existing.discard(event["data"]["id"])


def test_a_polling_scripts_view_matches_the_library_through_snaps_deletes_retention_and_a_restart(
        make_daemon, tmp_path):
    args = [*TEST_PATTERN, "--retention-max-pictures", "6", "--retention-min-age-s", "0"]
    daemons = [make_daemon(args)]
    for _ in range(3):
        snap(daemons[-1])  # there before the script starts
    script = PollingScript(lambda: daemons[-1].port)
    runner = threading.Thread(target=script.run, daemon=True)
    runner.start()
    taken = []
    try:
        for round_number in range(3):
            d = daemons[-1]
            for index in range(6):
                taken.append(snap(d)["id"])
                if index % 3 == 2:
                    assert d.request("DELETE", f"/library/{taken[-2]}")[0] in (204, 404)
            if round_number == 1:
                # A restart in the middle: the script reconnects with Last-Event-ID.
                assert d.stop() == 0
                daemons.append(make_daemon(args, data_dir=tmp_path / "data"))
        d = daemons[-1]
        expected = set(all_pictures(d.port))
        deadline = time.monotonic() + 10
        while script.existing != expected and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        script.stopping.set()
        runner.join(10)
    assert script.existing == expected
    assert len(expected) <= 6  # retention did remove pictures
    assert len(script.created_events) == len(set(script.created_events)), "a picture was announced twice"
    # None missed: every picture taken after the stream opened was announced.
    assert set(taken) <= set(script.created_events), set(taken) - set(script.created_events)
    assert script.resets == 0 and script.errors == []


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_page_shows_pictures_from_events_without_polling_and_across_a_restart(make_daemon, tmp_path):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    import os
    import subprocess

    os.environ.setdefault("SE_OFFLINE", "true")
    # A fixed port, so the page's EventSource finds the restarted daemon where it left it.
    port = free_port()
    args = ["--camera", "test-pattern", "--size", "640x480", "--fps", "30", "--listen", f"127.0.0.1:{port}"]
    d = make_daemon(args)
    assert d.port == port
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions",
                     f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(argument)
    # The network log: every request the page makes.
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)

    def wait(condition, timeout, message):
        return WebDriverWait(browser, timeout, poll_frequency=0.02).until(lambda _: condition(), message)

    def thumbnails():
        return browser.execute_script(
            "return [...document.querySelectorAll('#gallery li')].map((item) => Number(item.dataset.id))")

    def curl_snap():
        out = subprocess.run(["curl", "-sf", "-X", "POST", f"http://127.0.0.1:{port}/snap"],
                             capture_output=True, check=True, timeout=10)
        return json.loads(out.stdout)["id"]

    requested = []

    def read_network_log():
        for entry in browser.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requested.append(message["params"]["request"]["url"])

    try:
        browser.get(f"http://127.0.0.1:{port}/")
        wait(lambda: "640×480" in browser.find_element(By.ID, "mode").text, 10, "the preview never showed")
        wait(lambda: browser.execute_script("return events.readyState") == 1, 5, "/events never opened")
        time.sleep(1.5)  # long enough for a poll once a second to show in the log

        # A picture taken by curl shows within a second.
        picture = curl_snap()
        started = time.monotonic()
        wait(lambda: picture in thumbnails(), 1.0, "the picture taken by curl did not show within a second")
        shown_after = time.monotonic() - started
        # Deleted elsewhere: gone just as fast.
        assert d.request("DELETE", f"/library/{picture}")[0] == 204
        wait(lambda: picture not in thumbnails(), 1.0, "the deleted picture stayed")

        # A restart: pictures taken while the page is disconnected are replayed once it reconnects.
        assert d.stop() == 0
        d2 = make_daemon(args, data_dir=tmp_path / "data")
        while_away = curl_snap()
        wait(lambda: while_away in thumbnails(), 10, "the picture taken across the restart never showed")
        after = curl_snap()
        wait(lambda: after in thumbnails(), 1.0, "a picture after the reconnect did not show within a second")
        assert thumbnails() == sorted(set(thumbnails()), reverse=True)
        _, _, listing = d2.json("GET", "/library")
        assert thumbnails() == [item["id"] for item in listing["items"]]

        read_network_log()
        paths = [url.split(str(port), 1)[1] for url in requested if f"127.0.0.1:{port}" in url]
        assert not [p for p in paths if p.startswith("/status")], paths
        # Listed once at load, never polled.
        assert len([p for p in paths if p.startswith("/library")]) == 1, paths
        assert len([p for p in paths if p.startswith("/jobs")]) == 1, paths
        assert any(p.startswith("/events") for p in paths), paths
        print(f"\npicture shown {shown_after * 1000:.0f} ms after curl's snap returned")

        # Another data directory behind the same address: the page's Last-Event-ID is beyond
        # anything it recorded, so the page gets a reset and lists the library again.
        assert d2.stop() == 0
        d3 = make_daemon(args, data_dir=tmp_path / "other-data")
        fresh = curl_snap()
        wait(lambda: thumbnails() == [fresh], 10, "the page did not list the library again after a reset")
        read_network_log()
        paths = [url.split(str(port), 1)[1] for url in requested if f"127.0.0.1:{port}" in url]
        assert len([p for p in paths if p.startswith("/library")]) == 2, paths
        assert d3.json("GET", "/library")[2]["items"][0]["id"] == fresh
    finally:
        browser.quit()
