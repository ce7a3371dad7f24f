"""The S3 sink against moto's S3 server (moto_server on a free 127.0.0.1 port) with its
authentication on: pictures uploaded under PREFIX/YYYY/MM/DD/{id}.jpg with their checksum and
metadata, deletes propagated, a wrong key refused, and an outage of the store costing nothing."""

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402

BUCKET = "shutter-pictures"
PREFIX = "cam1/stills"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Moto:
    """moto_server on `port`; authentication switched on by `enable_auth`."""

    def __init__(self, port):
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self.process = None

    def start(self):
        env = dict(os.environ, AWS_DEFAULT_REGION="us-east-1")
        self.process = subprocess.Popen(
            ["moto_server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                return self
            except OSError:
                assert self.process.poll() is None, "moto_server exited"
                assert time.monotonic() < deadline, "moto_server did not start"
                time.sleep(0.1)

    def client(self, service, key_id="any", secret="any"):
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name="us-east-1", aws_access_key_id=key_id,
            aws_secret_access_key=secret, config=Config(retries={"max_attempts": 1}))

    def make_user_and_bucket(self):
        """An IAM user allowed s3:*, its key pair, and the bucket; then authentication on."""
        iam = self.client("iam")
        iam.create_user(UserName="shutterd")
        iam.put_user_policy(
            UserName="shutterd", PolicyName="s3", PolicyDocument=json.dumps({
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="shutterd")["AccessKey"]
        self.client("s3").create_bucket(Bucket=BUCKET)
        # From now on every request must be signed by a known key (moto's INITIAL_NO_AUTH_ACTION_COUNT).
        request = urllib.request.Request(
            self.endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
            headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=5).read()
        return key["AccessKeyId"], key["SecretAccessKey"]

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def moto():
    server = Moto(free_port()).start()
    yield server
    server.stop()


def start_daemon(make_daemon, moto, key_id, secret, extra=()):
    d = make_daemon(
        ["--size", "320x240", "--s3-url", f"{moto.endpoint}/{BUCKET}/{PREFIX}", "--s3-region", "us-east-1",
         *extra],
        env={"AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret})
    d.wait_for_log("sink starts with the events from now on")
    return d


def object_key(picture):
    date = picture["taken_at"][:10].replace("-", "/")
    return f"{PREFIX}/{date}/{picture['id']}.jpg"


def listed_keys(s3):
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []))


def wait_for_keys(s3, expected, d=None, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        keys = listed_keys(s3)
        if keys == sorted(expected):
            return keys
        assert time.monotonic() < deadline, (
            f"bucket has {keys}, expected {sorted(expected)}\n" + "\n".join(d.log_lines if d else []))
        time.sleep(0.05)


def s3_status(d):
    [status] = [s for s in d.json("GET", "/status")[2]["outbox"]["sinks"] if s["name"] == "s3"]
    return status


def test_pictures_are_uploaded_with_checksum_and_metadata_and_deletes_follow(make_daemon, moto):
    key_id, secret = moto.make_user_and_bucket()
    s3 = moto.client("s3", key_id, secret)
    d = start_daemon(make_daemon, moto, key_id, secret)
    first = d.snap()
    status, _, labelled = d.json("POST", "/snap", body=json.dumps({"label": "front door é"}))
    assert status == 201
    third = d.snap()
    wait_for_keys(s3, [object_key(p) for p in (first, labelled, third)], d)

    for picture in (first, labelled, third):
        stored = s3.get_object(Bucket=BUCKET, Key=object_key(picture), ChecksumMode="ENABLED")
        body = stored["Body"].read()
        assert hashlib.sha256(body).hexdigest() == picture["sha256"]
        assert body == d.request("GET", picture["url"])[2]
        assert stored["ChecksumSHA256"] == base64.b64encode(bytes.fromhex(picture["sha256"])).decode()
        assert stored["ContentType"] == "image/jpeg"
        assert stored["Metadata"]["taken-at"] == picture["taken_at"]
        assert stored["Metadata"]["picture-id"] == str(picture["id"])
    assert s3.head_object(Bucket=BUCKET, Key=object_key(labelled))["Metadata"]["label"] == "front door %C3%A9"

    assert d.request("DELETE", f"/library/{first['id']}")[0] == 204
    wait_for_keys(s3, [object_key(p) for p in (labelled, third)])
    status = s3_status(d)
    assert status["connected"] is True and status["failures"] == 0 and status["delivered"] == 4
    assert secret not in "\n".join(d.log_lines)
    assert secret not in json.dumps(d.json("GET", "/status")[2])


def test_a_wrong_secret_is_refused_by_the_store_and_nothing_is_stored(make_daemon, moto):
    key_id, secret = moto.make_user_and_bucket()
    s3 = moto.client("s3", key_id, secret)
    d = start_daemon(make_daemon, moto, key_id, "not-" + secret)
    d.snap()
    d.wait_for_log("sink failed; retrying with backoff", "403", "SignatureDoesNotMatch")
    status = s3_status(d)
    assert status["delivered"] == 0 and status["failures"] >= 1 and "SignatureDoesNotMatch" in status["last_error"]
    assert listed_keys(s3) == []


def test_without_keys_the_daemon_refuses_to_start(moto, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SHUTTERD_"))}
    binary = os.environ.get("SHUTTERD_BIN", os.path.join(os.path.dirname(__file__), "../../.build/release/shutterd"))
    result = subprocess.run(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
         "--s3-url", f"{moto.endpoint}/{BUCKET}"], env=env, capture_output=True, timeout=20)
    assert result.returncode != 0 and "AWS_ACCESS_KEY_ID" in result.stderr.decode(), result.stderr


def test_a_store_that_freezes_then_restarts_loses_nothing(make_daemon, moto, tmp_path):
    key_id, secret = moto.make_user_and_bucket()
    s3 = moto.client("s3", key_id, secret)
    d = start_daemon(make_daemon, moto, key_id, secret, extra=["--outbox-timeout-ms", "1000"])
    before = [d.snap() for _ in range(2)]
    wait_for_keys(s3, [object_key(p) for p in before])

    # Frozen: connections are accepted by the kernel and never answered; each try times out.
    moto.process.send_signal(signal.SIGSTOP)
    during = [d.snap() for _ in range(3)]
    d.wait_for_log("sink failed; retrying with backoff", "CURLcode 28")
    moto.process.send_signal(signal.SIGCONT)
    wait_for_keys(s3, [object_key(p) for p in before + during])

    # Killed and started again on the same port: moto keeps nothing, so its user and bucket are
    # made again, with new keys the restarted daemon is given. Pictures taken meanwhile follow.
    moto.stop()
    down = [d.snap() for _ in range(2)]
    d.wait_for_log("sink failed; retrying with backoff", "CURLcode 7")
    assert d.stop() == 0
    moto.start()
    key_id, secret = moto.make_user_and_bucket()
    s3 = moto.client("s3", key_id, secret)
    # The new keys from an AWS shared credentials file this time, the old ones left in the
    # environment: the file wins.
    credentials = tmp_path / "s3-credentials"
    credentials.write_text(
        f"[other]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = x\n"
        f"[default]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n")
    d.args += ["--s3-credentials", str(credentials)]
    d.start()
    after = [d.snap()]
    wait_for_keys(s3, [object_key(p) for p in down + after])
    for picture in down + after:
        body = s3.get_object(Bucket=BUCKET, Key=object_key(picture))["Body"].read()
        assert hashlib.sha256(body).hexdigest() == picture["sha256"]


def wait_for_stored(d, picture, stored, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        record = d.json("GET", f"/library/{picture['id']}")[2]
        if record["stored"] == stored:
            return record
        assert time.monotonic() < deadline, f"{record} is not stored {stored}"
        time.sleep(0.05)


def test_offload_frees_only_uploaded_pictures_and_media_redirects_to_the_store(make_daemon, moto):
    key_id, secret = moto.make_user_and_bucket()
    s3 = moto.client("s3", key_id, secret)
    d = start_daemon(
        make_daemon, moto, key_id, secret,
        extra=["--s3-mode", "offload", "--retention-max-pictures", "1", "--retention-min-age-s", "0"])
    first = d.snap()
    assert first["stored"] == ["local"]
    wait_for_keys(s3, [object_key(first)], d)
    wait_for_stored(d, first, ["local", "s3"])
    # Retention runs after this add: one picture too many, and the first is in the store.
    second = d.snap()
    wait_for_stored(d, first, ["s3"])
    assert not os.path.exists(os.path.join(d.data_dir, "media", f"{first['id']}.jpg"))
    assert d.json("GET", f"/library/{second['id']}")[2]["stored"] in (["local"], ["local", "s3"])
    assert d.request("GET", second["url"])[0] == 200

    locations = []
    for path in (first["url"], first["url"] + "?width=64"):
        status, headers, _ = d.request("GET", path)
        assert status == 302 and headers["cache-control"] == "no-store"
        locations.append(headers["location"])
        assert headers["location"].startswith(
            f"{moto.endpoint}/{BUCKET}/{object_key(first)}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={key_id}%2F")
        assert "&X-Amz-Expires=300&X-Amz-SignedHeaders=host&X-Amz-Signature=" in headers["location"]
    # moto checks signatures only in the Authorization header (a presigned URL with its IAM
    # authentication on is a 500 there), so the URL is fetched with authentication off again: this
    # shows it names the stored object; the signature is checked against AWS's published example
    # by S3PresignerTests.
    request = urllib.request.Request(
        moto.endpoint + "/moto-api/reset-auth", data=b"inf", method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request, timeout=5).read()
    body = urllib.request.urlopen(locations[0], timeout=10).read()
    assert hashlib.sha256(body).hexdigest() == first["sha256"]

    # Deleting an offloaded picture deletes it in the store; it was never a local delete.
    assert d.request("DELETE", f"/library/{first['id']}")[0] == 204
    assert d.request("GET", first["url"])[0] == 404
    deadline = time.monotonic() + 20
    while object_key(first) in listed_keys(s3):
        assert time.monotonic() < deadline, "the offloaded picture was not deleted in the store"
        time.sleep(0.05)
