"""Webhooks against a real receiver (http.server on a free 127.0.0.1 port): retried with
backoff until the receiver takes them, in order, signed, and with the JPEG intact."""

import hashlib
import hmac
import ctypes.util
import json
import os
import re
import shlex
import shutil
import subprocess
import time

import pytest
from conftest import BINARY, Daemon
from webhook_receiver import WebhookReceiver

SECRET = "hook-secret-5e1f"


def make_receiver(fail_first=0, hang_first_s=0.0, tls=None):
    """Answers 503 to the first `fail_first` POSTs, and sleeps `hang_first_s` on the first one
    (a dead peer the daemon's timeout must give up on)."""
    def respond(post):
        if post.number == 1 and hang_first_s:
            time.sleep(hang_first_s)
        return 503 if post.number <= fail_first else 204
    return WebhookReceiver(respond=respond, tls=tls)


@pytest.fixture
def receiver_factory():
    receivers = []

    def make(**kwargs):
        receiver = make_receiver(**kwargs)
        receivers.append(receiver)
        return receiver

    yield make
    for receiver in receivers:
        receiver.close()


def start_with_hooks(make_daemon, tmp_path, hooks, extra=()):
    config = tmp_path / "hooks.json"
    config.write_text(json.dumps({"webhooks": hooks}))
    d = make_daemon(["--size", "320x240", "--config", str(config), *extra])
    # A new sink starts with the events from now on.
    for _ in hooks:
        d.wait_for_log("sink starts with the events from now on")
    return d


def sink_status(d):
    status, _, body = d.json("GET", "/status")
    assert status == 200
    return [s for s in body["outbox"]["sinks"] if s["name"].startswith("webhook:")]


def test_failed_posts_are_retried_with_backoff_then_delivered_in_order_and_signed(
        make_daemon, tmp_path, receiver_factory):
    receiver = receiver_factory(fail_first=3)
    d = start_with_hooks(make_daemon, tmp_path, [{
        "url": receiver.url, "events": ["picture.created", "picture.deleted"], "secret": SECRET}])
    picture = d.snap()
    assert d.request("DELETE", f"/library/{picture['id']}")[0] == 204
    accepted = receiver.wait_for(2)

    # Three 503s, then the same event again: nothing skipped, nothing reordered.
    posts = receiver.all_posts()
    assert len(posts) == 5
    created = [json.loads(post.body) for post in posts[:4]]
    assert all(event == created[0] for event in created)
    times = [post.arrived for post in posts[:4]]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # RetryBackoff: 1 s doubling, each drawn from the upper half of its step.
    assert gaps[0] >= 0.45 and gaps[1] >= 0.95 and gaps[2] >= 1.9, gaps

    first, second = (json.loads(post.body) for post in accepted)
    assert first["type"] == "picture.created" and first["data"]["id"] == picture["id"]
    assert first["data"]["sha256"] == picture["sha256"] and first["data"]["url"] == picture["url"]
    assert second["type"] == "picture.deleted" and second["data"]["id"] == picture["id"]
    assert second["data"]["reason"] == "request" and second["data"]["taken_at"] == picture["taken_at"]
    assert second["id"] > first["id"]
    for headers, body in ((post.headers, post.body) for post in accepted):
        assert headers["content-type"] == "application/json"
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-shutter-signature"], expected)
        assert headers["x-shutter-event-id"] == str(json.loads(body)["id"])
    # A body changed in transit would not match.
    tampered = accepted[0].body.replace(b'"picture.created"', b'"picture.deleted"')
    assert hmac.new(SECRET.encode(), tampered, hashlib.sha256).hexdigest() not in accepted[0].headers["x-shutter-signature"]

    [status] = sink_status(d)
    assert status["delivered"] == 2 and status["failures"] == 3 and status["connected"] is True
    d.wait_for_log("sink failed; retrying with backoff", "503")
    assert SECRET not in "\n".join(d.log_lines)
    assert SECRET not in json.dumps(d.json("GET", "/status")[2])


def test_include_jpeg_posts_multipart_with_the_picture_intact(make_daemon, tmp_path, receiver_factory):
    receiver = receiver_factory()
    d = start_with_hooks(make_daemon, tmp_path, [{
        "url": receiver.url, "events": ["picture.created"], "include_jpeg": True, "secret": SECRET}])
    picture = d.snap()
    [post] = receiver.wait_for(1)
    headers, body = post.headers, post.body
    assert headers["content-type"].startswith("multipart/form-data; boundary=")
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["x-shutter-signature"] == expected

    # Parsed by the standard library's MIME parser, as a receiver would.
    from email.parser import BytesParser
    from email.policy import HTTP
    message = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + headers["content-type"].encode() + b"\r\n\r\n" + body)
    parts = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
    event = json.loads(parts["event"].get_payload(decode=True))
    assert event["type"] == "picture.created" and event["data"]["id"] == picture["id"]
    jpeg = parts["picture"].get_payload(decode=True)
    assert parts["picture"].get_content_type() == "image/jpeg"
    assert parts["picture"].get_filename() == f"{picture['id']}.jpg"
    assert hashlib.sha256(jpeg).hexdigest() == picture["sha256"]
    assert jpeg == d.request("GET", picture["url"])[2]
    # A real decoder opens it at the recorded size.
    decoded = subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True, check=True).stdout
    assert decoded.split(b"\n")[1] == f"{picture['width']} {picture['height']}".encode()


def test_a_hook_that_never_answers_times_out_and_is_retried(make_daemon, tmp_path, receiver_factory):
    # The first POST hangs for 4 s; outbox_timeout_ms 1000 gives up on it and tries again.
    receiver = receiver_factory(hang_first_s=4)
    d = start_with_hooks(
        make_daemon, tmp_path, [{"url": receiver.url, "events": ["picture.created"]}],
        extra=["--outbox-timeout-ms", "1000"])
    picture = d.snap()
    started = time.monotonic()
    [post] = receiver.wait_for(1, timeout=10)
    assert json.loads(post.body)["data"]["id"] == picture["id"]
    assert time.monotonic() - started < 3.9, "delivery waited for the hung attempt"
    d.wait_for_log("sink failed; retrying with backoff", "CURLcode 28")


def test_webhook_url_flag_sends_every_event_and_bad_settings_refuse_to_start(
        make_daemon, tmp_path, receiver_factory):
    receiver = receiver_factory()
    d = make_daemon(["--size", "320x240", "--webhook-url", receiver.url])
    d.wait_for_log("sink starts with the events from now on")
    picture = d.snap()
    assert d.json("PATCH", f"/library/{picture['id']}", body='{"keep": true}')[0] == 200
    accepted = receiver.wait_for(2)
    assert [json.loads(post.body)["type"] for post in accepted] == ["picture.created", "picture.updated"]
    assert "x-shutter-signature" not in accepted[0].headers

    for bad, words in [
        ({"webhooks": [{"url": "ftp://example.com/x"}]}, "not an http:// or https:// URL"),
        ({"webhooks": [{"url": receiver.url, "events": ["picture.made"]}]}, "not an event type"),
        ({"webhooks": {"url": receiver.url}}, "not a JSON list"),
    ]:
        config = tmp_path / "bad.json"
        config.write_text(json.dumps(bad))
        result = subprocess.run(
            [d.binary, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "other"), "--config", str(config)],
            capture_output=True, timeout=20)
        assert result.returncode == 2 and words in result.stderr.decode(), result.stderr


def test_a_certificate_the_system_does_not_trust_is_refused(make_daemon, tmp_path, receiver_factory):
    # A self-signed certificate for 127.0.0.1: the TLS handshake works, the verification fails,
    # and nothing is sent.
    cert, key = tmp_path / "hook.crt", tmp_path / "hook.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=hook",
         "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    receiver = receiver_factory(tls=(str(cert), str(key)))
    d = start_with_hooks(make_daemon, tmp_path, [{"url": receiver.url, "events": ["picture.created"]}])
    d.snap()
    # CURLE_PEER_FAILED_VERIFICATION
    d.wait_for_log("sink failed; retrying with backoff", "CURLcode 60")
    [status] = sink_status(d)
    assert status["delivered"] == 0 and status["connected"] is False
    assert receiver.all_posts() == []


def mapped_libraries(d):
    """Base names of the shared objects the daemon has mapped (/proc/PID/maps)."""
    with open(f"/proc/{d.process.pid}/maps") as maps:
        return {line.split()[-1].rsplit("/", 1)[-1] for line in maps if " /" in line}


def test_libcurl_is_loaded_only_once_a_webhook_or_s3_sink_needs_it(make_daemon, tmp_path, receiver_factory):
    # Linked, libcurl would bring 24 libraries (GnuTLS, Kerberos, LDAP...) into every daemon:
    # 3.9 MiB resident for nothing when no HTTP sink is configured (benchmarks/README.md).
    plain = make_daemon(["--size", "320x240"], data_dir=tmp_path / "plain")
    plain.snap()
    loaded = mapped_libraries(plain)
    assert "libc.so.6" in loaded  # the reading works
    assert not [name for name in loaded if name.startswith(("libcurl", "libgnutls", "libkrb5"))], loaded

    receiver = receiver_factory()
    d = make_daemon(["--size", "320x240", "--webhook-url", receiver.url])
    d.wait_for_log("sink starts with the events from now on")
    assert [name for name in mapped_libraries(d) if name.startswith("libcurl.so.4")]
    d.snap()
    assert json.loads(receiver.wait_for(1)[0].body)["type"] == "picture.created"


def test_a_webhook_without_libcurl_refuses_to_start_and_names_the_package(tmp_path):
    # libcurl is loaded with dlopen, so a machine without libcurl4 runs every daemon that has
    # no HTTP sink, and one that has refuses to start saying what to install. The library is
    # hidden in a private mount namespace: /dev/null bound over it, for this daemon only.
    if not shutil.which("unshare") or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("unshare -m (mount namespaces) is not allowed here")
    found = ctypes.util.find_library("curl")
    library = next((os.path.realpath(os.path.join(directory, found)) for directory in
                    ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib", "/lib")
                    if found and os.path.exists(os.path.join(directory, found))), None)
    if library is None:
        pytest.skip("libcurl is not installed, so there is nothing to hide")
    without_libcurl = tmp_path / "shutterd-without-libcurl"
    hide_and_run = 'mount --bind /dev/null "$0" && exec "$@"'
    without_libcurl.write_text(
        "#!/bin/sh\n"
        f"exec unshare -m sh -c {shlex.quote(hide_and_run)} {shlex.quote(library)} {shlex.quote(BINARY)} \"$@\"\n")
    without_libcurl.chmod(0o755)

    refused = subprocess.run(
        [str(without_libcurl), "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "hook"), "--size", "320x240",
         "--webhook-url", "http://127.0.0.1:9/hook"], capture_output=True, timeout=20)
    assert refused.returncode == 1, refused.stderr
    assert re.search(rb"libcurl could not be loaded \(.*libcurl\.so\.4.*\); install libcurl4", refused.stderr), \
        refused.stderr

    # Without a webhook or S3 sink the same daemon runs and stores pictures.
    plain = Daemon(tmp_path / "plain", ["--size", "320x240"], binary=str(without_libcurl)).start()
    try:
        assert plain.snap()["id"] == 1
        assert plain.stop() == 0
    finally:
        if plain.process.poll() is None:
            plain.process.kill()
