"""The MQTT sink against a real Mosquitto broker (Tests/e2e/mqtt_broker.py): Home Assistant's
discovery configs, a picture event per snap with its JPEG, commands from snap/set and job/set,
availability and the will, and at-least-once delivery across a broker restart and a kill -9."""

import hashlib
import io
import json
import signal
import subprocess
import time

import pytest
from PIL import Image

from mqtt_broker import PASSWORD, Broker, Subscriber

PREFIX = "shutterd/e2e-cam"


@pytest.fixture
def broker(tmp_path):
    broker = Broker(tmp_path / "broker").start()
    yield broker
    broker.stop()


@pytest.fixture
def subscriber(broker):
    subscriber = Subscriber(broker)
    yield subscriber
    subscriber.close()


def mqtt_args(broker, *extra, password=PASSWORD):
    return ["--size", "320x240", "--fps", "30", "--name", "e2e-cam", "--mqtt-url", broker.url(password), *extra]


def events(subscriber, topic):
    return [json.loads(payload) for payload in subscriber.on(topic)]


def picture_events(subscriber):
    return [event for event in events(subscriber, PREFIX + "/picture") if event["event"] == "picture.created"]


def wait_for_pictures(subscriber, ids, timeout=30):
    wanted = set(ids)
    return subscriber.wait_for(
        lambda s: wanted <= {event["id"] for event in picture_events(s)}, timeout,
        what=f"picture events for {sorted(wanted)}")


def sink_status(d):
    status, _, body = d.json("GET", "/status")
    assert status == 200
    return next(sink for sink in body["outbox"]["sinks"] if sink["name"] == "mqtt")


def test_discovery_availability_and_a_picture_event_per_snap(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker))
    subscriber.wait_for(lambda s: b"online" in s.on(PREFIX + "/availability"), what="online")
    configs = {}
    for component, object_id in [("camera", "picture"), ("button", "snap"), ("switch", "interval"),
                                 ("sensor", "last_picture"), ("sensor", "pictures"),
                                 ("binary_sensor", "camera")]:
        topic = f"homeassistant/{component}/shutterd_e2e-cam/{object_id}/config"
        payload = subscriber.wait_for(lambda s: s.on(topic), what=topic)[-1]
        config = json.loads(payload)
        assert config["availability_topic"] == PREFIX + "/availability"
        assert config["device"]["identifiers"] == ["shutterd_e2e-cam"]
        assert config["unique_id"] == f"shutterd_e2e-cam_{object_id}"
        configs[component, object_id] = config
    assert configs["camera", "picture"]["topic"] == PREFIX + "/picture/jpeg"
    assert configs["button", "snap"]["command_topic"] == PREFIX + "/snap/set"
    assert configs["switch", "interval"]["command_topic"] == PREFIX + "/job/set"
    assert configs["binary_sensor", "camera"]["state_topic"] == PREFIX + "/camera"

    records = [d.snap() for _ in range(3)]
    wait_for_pictures(subscriber, [r["id"] for r in records])
    published = picture_events(subscriber)
    assert [event["id"] for event in published] == [r["id"] for r in records]
    for event, record in zip(published, records):
        assert event["sha256"] == record["sha256"] and event["taken_at"] == record["taken_at"]
    event_ids = [event["event_id"] for event in published]
    assert event_ids == sorted(event_ids) and len(set(event_ids)) == 3

    # The retained JPEG is the newest picture, byte for byte, and decodes.
    jpeg = subscriber.wait_for(
        lambda s: [p for p in s.on(PREFIX + "/picture/jpeg")
                   if hashlib.sha256(p).hexdigest() == records[-1]["sha256"]], what="the JPEG")[-1]
    assert Image.open(io.BytesIO(jpeg)).size == (320, 240)
    state = subscriber.wait_for(
        lambda s: [json.loads(p) for p in s.on(PREFIX + "/state") if json.loads(p)["pictures"] == 3],
        what="the library state")[-1]
    assert state["last_picture_at"] == records[-1]["taken_at"]

    sink = sink_status(d)
    assert sink["connected"] is True and sink["delivered"] >= 3
    # The password is in neither the log nor /status.
    assert PASSWORD not in "\n".join(d.log_lines)
    assert PASSWORD not in d.request("GET", "/status")[2].decode()
    assert "mqtt://shutter:***@127.0.0.1" in d.wait_for_log("connected to the MQTT broker")


def test_snap_set_and_job_set_take_pictures(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker, "--mqtt-job-every-s", "1"))
    subscriber.wait_for(lambda s: b"online" in s.on(PREFIX + "/availability"), what="online")
    subscriber.publish(PREFIX + "/snap/set", b"{}")
    subscriber.wait_for(lambda s: len(picture_events(s)) >= 1, what="a picture from snap/set")
    subscriber.publish(PREFIX + "/snap/set", json.dumps({"label": "front door"}).encode())
    published = subscriber.wait_for(lambda s: len(picture_events(s)) >= 2 and picture_events(s),
                                    what="two pictures from snap/set")
    status, _, library = d.json("GET", "/library")
    assert sorted(r["id"] for r in library["items"]) == sorted(e["id"] for e in published[:2])
    assert "front door" in [r["label"] for r in library["items"]]

    # A flood: one snap at a time, the rest refused (and logged once per flood).
    for _ in range(30):
        subscriber.client.publish(PREFIX + "/snap/set", b"{}", qos=1)
    d.wait_for_log("refused an MQTT command", "still running")
    time.sleep(2)
    status, _, flooded = d.json("GET", "/library?limit=100")
    assert 3 <= len(flooded["items"]) < 2 + 30

    # Oversized and malformed payloads are ignored, and take nothing.
    subscriber.publish(PREFIX + "/snap/set", b"{" + b" " * 4096 + b"}")
    subscriber.publish(PREFIX + "/snap/set", b"not json")
    d.wait_for_log("ignored an MQTT command", "larger than 1024 bytes")
    d.wait_for_log("ignored an MQTT command", "snap/set takes")

    # The switch: ON starts an interval job (a picture a second), OFF cancels it.
    subscriber.publish(PREFIX + "/job/set", b"ON")
    subscriber.wait_for(lambda s: b"ON" in s.on(PREFIX + "/job/state"), what="job state ON")
    subscriber.wait_for(lambda s: any(e.get("job_id") for e in picture_events(s)), what="a picture of the job")
    subscriber.publish(PREFIX + "/job/set", b"OFF")
    subscriber.wait_for(lambda s: s.on(PREFIX + "/job/state")[-1:] == [b"OFF"], what="job state OFF")
    status, _, jobs = d.json("GET", "/jobs")
    assert [job["state"] for job in jobs["items"] if job["label"] == "mqtt"] == ["cancelled"]


def test_a_wrong_password_is_refused(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker, password="wrong-password"))
    line = d.wait_for_log("cannot connect to the MQTT broker", "refused")
    assert "wrong-password" not in "\n".join(d.log_lines) and "***" in line
    d.snap()
    assert sink_status(d)["connected"] is False
    assert subscriber.on(PREFIX + "/availability") == []


def test_the_will_says_offline_on_kill_9_and_a_clean_stop_says_it_too(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker))
    subscriber.wait_for(lambda s: s.on(PREFIX + "/availability")[-1:] == [b"online"], what="online")
    d.process.send_signal(signal.SIGKILL)
    d.process.wait(10)
    subscriber.wait_for(lambda s: s.on(PREFIX + "/availability")[-1:] == [b"offline"], what="the will")
    d.start()
    subscriber.wait_for(lambda s: s.on(PREFIX + "/availability")[-1:] == [b"online"], what="online again")
    assert d.stop() == 0
    subscriber.wait_for(lambda s: s.on(PREFIX + "/availability")[-1:] == [b"offline"], what="offline on stop")


def test_a_broker_restart_loses_nothing_and_keeps_the_order(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker))
    subscriber.wait_for(lambda s: b"online" in s.on(PREFIX + "/availability"), what="online")
    before = [d.snap() for _ in range(2)]
    wait_for_pictures(subscriber, [r["id"] for r in before])

    broker.stop()
    during = []
    for _ in range(5):
        started = time.monotonic()
        during.append(d.snap())
        # A broker that is down never holds up a snap.
        assert time.monotonic() - started < 2
        time.sleep(1)
    assert sink_status(d)["connected"] is False
    broker.start()
    after = [d.snap() for _ in range(2)]
    records = before + during + after
    wait_for_pictures(subscriber, [r["id"] for r in records], timeout=60)

    # In order, none lost: after dropping duplicates (at least once), the picture ids are the
    # snaps' in the order taken, and the event ids only grow.
    seen = []
    for event in picture_events(subscriber):
        if event["id"] not in seen:
            seen.append(event["id"])
    assert seen == [r["id"] for r in records]
    event_ids = []
    for event in picture_events(subscriber):
        if event["event_id"] not in event_ids:
            event_ids.append(event["event_id"])
    # Only pictures happened meanwhile, so their event ids leave no gap.
    assert event_ids == list(range(event_ids[0], event_ids[0] + len(event_ids)))
    assert sink_status(d)["connected"] is True
    d.wait_for_log("lost the connection to the MQTT broker")


def test_kill_9_mid_delivery_redelivers_after_the_restart(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker))
    subscriber.wait_for(lambda s: b"online" in s.on(PREFIX + "/availability"), what="online")
    # Queued while the broker is down, then the daemon dies before delivering any of them.
    broker.stop()
    queued = [d.snap() for _ in range(3)]
    d.process.send_signal(signal.SIGKILL)
    d.process.wait(10)
    broker.start()
    d.start()
    wait_for_pictures(subscriber, [r["id"] for r in queued], timeout=60)

    # Killed while delivering a quick run of snaps: whatever was not acknowledged and saved
    # comes again after the restart; the event ids tell duplicates apart.
    burst = [d.snap() for _ in range(10)]
    d.process.send_signal(signal.SIGKILL)
    d.process.wait(10)
    d.start()
    wait_for_pictures(subscriber, [r["id"] for r in burst], timeout=60)
    by_event_id = {}
    for event in picture_events(subscriber):
        assert by_event_id.setdefault(event["event_id"], event["id"]) == event["id"]
    ids_in_order = list(dict.fromkeys(event["id"] for event in picture_events(subscriber)))
    assert ids_in_order == [r["id"] for r in queued + burst]


def test_mqtts_verifies_the_brokers_certificate_against_the_system_store(make_daemon, tmp_path):
    cert, key = str(tmp_path / "broker.pem"), str(tmp_path / "broker.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    broker = Broker(tmp_path / "tls-broker", tls=(cert, key)).start()
    try:
        url = f"mqtts://shutter:{PASSWORD}@localhost:{broker.port}"
        # A self-signed certificate is in no system store: refused, nothing published.
        untrusting = make_daemon(["--size", "320x240", "--name", "e2e-cam", "--mqtt-url", url])
        untrusting.wait_for_log("cannot connect to the MQTT broker", "mqtts://shutter:***@localhost")
        assert sink_status(untrusting)["connected"] is False
        assert untrusting.stop() == 0
        # The same certificate made the store (OpenSSL's SSL_CERT_FILE): verified, connected.
        trusting = make_daemon(["--size", "320x240", "--name", "e2e-cam", "--mqtt-url", url],
                               env={"SSL_CERT_FILE": cert}, data_dir=tmp_path / "data-trusting")
        trusting.wait_for_log("connected to the MQTT broker", "mqtts://")
        trusting.snap()
        # Delivered: the broker acknowledged the picture's publishes over TLS.
        deadline = time.monotonic() + 20
        while sink_status(trusting)["delivered"] < 1:
            assert time.monotonic() < deadline, sink_status(trusting)
            time.sleep(0.1)
    finally:
        broker.stop()


def test_a_picture_deleted_before_delivery_is_announced_without_its_jpeg(make_daemon, broker, subscriber):
    d = make_daemon(mqtt_args(broker))
    subscriber.wait_for(lambda s: b"online" in s.on(PREFIX + "/availability"), what="online")
    broker.stop()
    gone, kept = d.snap(), d.snap()
    assert d.request("DELETE", f"/library/{gone['id']}")[0] == 204
    broker.start()
    wait_for_pictures(subscriber, [gone["id"], kept["id"]], timeout=60)
    deleted = subscriber.wait_for(lambda s: events(s, PREFIX + "/picture/deleted"), what="the deletion")
    assert [(e["id"], e["reason"]) for e in deleted] == [(gone["id"], "request")]
    # Its record went out, in order, but its file was gone: only the kept picture's JPEG came.
    jpegs = {hashlib.sha256(p).hexdigest() for p in subscriber.on(PREFIX + "/picture/jpeg")}
    assert kept["sha256"] in jpegs and gone["sha256"] not in jpegs
