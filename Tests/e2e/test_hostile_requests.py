"""A corpus of hostile requests from a raw socket (Tests/e2e/data/hostile_requests.json, one
entry each: the bytes as Latin-1, the status expected, whether the server must close, and why).

Each gets its documented answer, as JSON when it is an error; and after each, an honest client
on a new connection is served at once. A new case is a line of data, not a new test."""

import json
import os
import socket
import time

import pytest

CORPUS = json.load(open(os.path.join(os.path.dirname(__file__), "data", "hostile_requests.json")))


def read_response(sock):
    """One response: (status, headers, body), read by its Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data[:200]!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed inside a body"
        rest += chunk
    return status, headers, rest[:length], rest[length:]


@pytest.fixture(scope="module")
def hostile_target(tmp_path_factory):
    from conftest import Daemon
    daemon = Daemon(tmp_path_factory.mktemp("hostile"), ["--size", "320x240", "--request-timeout-ms", "5000"]).start()
    yield daemon
    daemon.stop()


@pytest.mark.parametrize("case", CORPUS, ids=[c["name"] for c in CORPUS])
def test_each_hostile_request_gets_its_documented_answer(hostile_target, case):
    d = hostile_target
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", d.port), timeout=3) as sock:
        sock.sendall(case["request"].encode("latin-1"))
        status, headers, body, _ = read_response(sock)
        assert status == case["status"], (case["name"], status, body[:200])
        # Never a wait for a timeout: each answer comes at once (the timeout is 5 s).
        assert time.monotonic() - started < 2, case["name"]
        if status >= 400:
            assert headers["content-type"] == "application/json", headers
            answer = json.loads(body)
            assert answer["error"] and answer["detail"], answer
        if case["closes"]:
            assert headers.get("connection") == "close", headers
            sock.settimeout(2)
            # Whatever else was sent is not read as another request: the server closes.
            while True:
                rest = sock.recv(65536)
                if not rest:
                    break
                assert rest.startswith(b"HTTP/1.1 ") is False or case["name"] == "pipeline_then_garbage", rest[:100]
    # The next honest client is served at once.
    started = time.monotonic()
    assert d.request("GET", "/healthz")[0] == 200
    assert time.monotonic() - started < 1
