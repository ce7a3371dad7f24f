"""The event history behind /events and the outbox, as /status shows it: each change is one
event, the ids go on across a restart, and the history stays within outbox_max_events."""

import time


def outbox(d):
    status, _, body = d.json("GET", "/status")
    assert status == 200
    return body["outbox"]


def wait_for_camera_event(d, after=0):
    """Waits for an event newer than `after`: the camera's `streaming`, an event of its own,
    recorded as the test pattern starts (after a restart, the ids before it are `after`'s)."""
    deadline = time.monotonic() + 5
    while outbox(d)["latest_event_id"] <= after:
        assert time.monotonic() < deadline, "no camera.state event"
        time.sleep(0.02)


def test_each_change_is_one_event_and_ids_go_on_after_a_restart(make_daemon):
    d = make_daemon(["--size", "320x240"])
    wait_for_camera_event(d)
    before = outbox(d)
    assert before["sinks"] == [] and before["events_pruned"] == 0
    picture = d.snap()
    assert d.json("PATCH", f"/library/{picture['id']}", body='{"keep": true}')[0] == 200
    assert d.request("DELETE", f"/library/{picture['id']}")[0] == 204
    after = outbox(d)
    assert after["latest_event_id"] == before["latest_event_id"] + 3
    assert after["events"] == before["events"] + 3
    assert d.stop() == 0
    d.start()
    wait_for_camera_event(d, after=after["latest_event_id"])
    # The restarted camera's `streaming` takes the next id: nothing is handed out twice.
    assert outbox(d)["latest_event_id"] == after["latest_event_id"] + 1
    d.snap()
    assert outbox(d)["latest_event_id"] == after["latest_event_id"] + 2


def test_the_history_keeps_at_most_outbox_max_events(make_daemon):
    d = make_daemon(["--size", "320x240", "--outbox-max-events", "64"])
    wait_for_camera_event(d)
    for _ in range(100):
        d.snap()
    history = outbox(d)
    assert 64 <= history["events"] <= 65, history
    assert history["events_pruned"] == history["latest_event_id"] - history["events"]
