"""HTTP/1.1 behaviour from raw sockets and curl: framing, errors, limits, keep-alive."""

import json
import socket
import subprocess
import time


def responses(data: bytes):
    """Splits raw bytes into (status, headers, body) tuples using Content-Length."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", 0))
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


def test_malformed_requests_get_json_errors_and_the_daemon_keeps_serving(make_daemon):
    d = make_daemon(["--size", "320x240", "--max-header-bytes", "4096", "--max-body-bytes", "2048",
                     "--max-target-bytes", "1024"])
    cases = [
        (b"this is not http\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 5000 + b"\r\n\r\n", 431),
        (b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414),
        (b"POST /snap HTTP/1.1\r\nHost: localhost\r\nContent-Length: 999999\r\n\r\n", 413),
        (b"POST /snap HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET / HTTP/2.0\r\nHost: localhost\r\n\r\n", 505),
    ]
    for request, expected in cases:
        answer = d.raw(request)
        status, headers, body = responses(answer)[0]
        assert status == expected, (request[:60], answer[:200])
        assert headers["content-type"] == "application/json"
        assert headers["connection"] == "close"
        assert json.loads(body)["detail"]
        assert d.request("GET", "/healthz")[0] == 200


def test_pipelined_requests_are_answered_in_order(daemon):
    record = daemon.snap()
    pipeline = (
        f"GET /library/{record['id']} HTTP/1.1\r\nHost: localhost\r\n\r\n"
        "POST /snap HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"
        "GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n"
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    ).encode()
    answers = responses(daemon.raw(pipeline))
    assert [a[0] for a in answers] == [200, 201, 404, 200]
    assert json.loads(answers[0][2])["id"] == record["id"]
    assert json.loads(answers[1][2])["id"] > record["id"]
    assert answers[3][1]["connection"] == "close"


def test_keep_alive_http11_and_http10(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        for _ in range(3):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            data = sock.recv(65536)
            assert data.startswith(b"HTTP/1.1 200")
            assert b"connection: close" not in data.lower()
    # HTTP/1.0 keeps the connection only when asked to.
    answer = daemon.raw(b"GET /healthz HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" in answer
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        data = sock.recv(65536)
        assert b"Connection: keep-alive" in data
        sock.sendall(b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")


def test_method_not_allowed_lists_allow(daemon):
    status, headers, body = daemon.request("PUT", "/library")
    assert status == 405
    assert set(headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert json.loads(body)["error"]
    status, headers, _ = daemon.request("GET", "/snap")
    assert status == 405 and headers["allow"] == "POST"


def test_expect_continue_and_chunked_bodies(daemon):
    # Older curl sends Expect: 100-continue for bodies over 1 KiB, newer ones over 1 MiB: ask explicitly.
    body = "{" + " " * 2000 + "}"
    out = subprocess.run(
        ["curl", "-sS", "-v", "-X", "POST", "-H", "Content-Type: application/json", "-H", "Expect: 100-continue",
         "--data-binary", body,
         f"http://127.0.0.1:{daemon.port}/snap"], capture_output=True, text=True, check=True)
    assert "Expect: 100-continue" in out.stderr
    assert "HTTP/1.1 100 Continue" in out.stderr
    assert json.loads(out.stdout)["id"] >= 1
    chunked = b"POST /snap HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n1\r\n{\r\n1;ext=1\r\n}\r\n0\r\n\r\n"
    status, _, payload = responses(daemon.raw(chunked))[0]
    assert status == 201 and json.loads(payload)["id"] >= 2


def test_request_timeout_answers_408(make_daemon):
    d = make_daemon(["--size", "320x240", "--request-timeout-ms", "600"])
    start = time.monotonic()
    answer = d.raw(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n", timeout=10)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert 0.5 < time.monotonic() - start < 5
    assert d.request("GET", "/healthz")[0] == 200


def test_connection_limit_answers_503(make_daemon):
    d = make_daemon(["--size", "320x240", "--max-connections", "2"])
    held = [socket.create_connection(("127.0.0.1", d.port), timeout=5) for _ in range(2)]
    try:
        time.sleep(0.2)
        answer = d.raw(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503"), answer
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    assert d.request("GET", "/healthz")[0] == 200


def test_a_client_that_stops_reading_does_not_block_others(daemon):
    record = daemon.snap()
    # Ask for the same picture many times and never read the answers.
    stalled = socket.create_connection(("127.0.0.1", daemon.port), timeout=5)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.sendall(f"GET {record['url']} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode() * 16)
    try:
        for _ in range(20):
            assert daemon.request("GET", "/healthz")[0] == 200
        assert daemon.snap()["id"] > record["id"]
    finally:
        stalled.close()


def test_running_out_of_descriptors_pauses_accepting_without_spinning(make_daemon):
    import resource

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    d = make_daemon(["--size", "320x240"], preexec_fn=low_limit)
    held = []
    try:
        for _ in range(90):
            held.append(socket.create_connection(("127.0.0.1", d.port), timeout=5))
        time.sleep(1.0)
        failures = [line for line in d.log_lines if "accept failed" in line]
        assert 1 <= len(failures) <= 3, failures[:5]
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.5)
    assert d.request("GET", "/healthz")[0] == 200


def _get_healthz(port, source, timeout=5):
    """GET /healthz from the loopback address `source`; returns the raw answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_silent_connections_do_not_lock_out_honest_clients(make_daemon):
    # The idle timeout is a minute; silent connections must be dropped long before it.
    d = make_daemon(["--size", "320x240", "--max-connections", "64", "--max-connections-per-peer", "16",
                     "--header-timeout-ms", "1000", "--idle-timeout-ms", "60000"])
    silent = []
    try:
        # 16 held, and 44 refused: fewer than the 64 refusals drained at once, so each gets its 503
        # intact (more are closed at once, and a reset may destroy theirs).
        for _ in range(60):
            silent.append(socket.create_connection(("127.0.0.1", d.port), timeout=5))
        time.sleep(0.2)
        # Another client address is served at once: one address cannot take every slot.
        start = time.monotonic()
        answer = _get_healthz(d.port, "127.0.0.2")
        assert answer.startswith(b"HTTP/1.1 200"), answer
        assert time.monotonic() - start < 1
        # The silent client's own address is over its limit: a 503 in JSON, at once.
        answer = _get_healthz(d.port, "127.0.0.1")
        assert answer.startswith(b"HTTP/1.1 503"), answer
        assert "127.0.0.1" in json.loads(answer.split(b"\r\n\r\n", 1)[1])["detail"]
        # Within the header timeout the held ones are closed without a word, and the address is served again.
        held = 0
        for sock in silent:
            sock.settimeout(5)
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                continue
            if data == b"":
                held += 1
        assert held == 16
        assert time.monotonic() - start < 4
        assert _get_healthz(d.port, "127.0.0.1").startswith(b"HTTP/1.1 200")
    finally:
        for sock in silent:
            sock.close()
    d.wait_for_log("over its limit")
    time.sleep(0.2)  # a second refusal line, which would be a defect, has time to arrive
    refusals = [line for line in d.log_lines if "over its limit" in line]
    assert len(refusals) == 1, refusals


def test_bodies_and_queries_that_say_two_things_are_refused(daemon):
    # A JSON key given twice, anywhere a body is read: a 400 naming it, never the first value.
    for method, path, body in [
        ("POST", "/snap", '{"delay": 5, "delay": -1}'),
        ("POST", "/jobs", '{"kind": "delayed", "delay": 5, "delay": -1}'),
        ("PATCH", "/camera/controls", '{"brightness": 1, "brightness": 2}'),
    ]:
        status, _, answer = daemon.json(method, path, body=body, headers={"Content-Type": "application/json"})
        assert status == 400, (path, status, answer)
        assert "twice" in answer["detail"] and ("delay" in answer["detail"] or "brightness" in answer["detail"]), answer
    record = daemon.snap()
    status, _, answer = daemon.json("PATCH", f"/library/{record['id']}", body='{"keep": true, "keep": false}')
    assert status == 400 and "`keep`" in answer["detail"], answer
    # Query numbers are decimals: no hex, no exponent, no infinity.
    for delay in ["0x5", "1e1", "inf", "nan"]:
        status, _, answer = daemon.json("POST", f"/snap?delay={delay}")
        assert status == 400 and answer["error"] == "invalid value", (delay, answer)
    assert daemon.json("GET", "/library?limit=0x10")[0] == 400
    # A parameter that cannot be decoded is refused like any unknown one.
    status, _, answer = daemon.json("GET", "/status?%ff=1")
    assert status == 400 and answer["error"] == "unknown parameter", answer
    assert daemon.json("GET", "/library?limit=%ff")[0] == 400
    assert len(daemon.json("GET", "/library")[2]["items"]) == 1, "nothing was taken by the refused snaps"


def test_max_connections_is_lowered_to_fit_the_descriptor_limit(make_daemon):
    import resource

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    d = make_daemon(["--size", "320x240"], preexec_fn=low_limit)
    d.wait_for_log("max_connections lowered")
    lowered = [line for line in d.log_lines if "max_connections lowered" in line]
    # (256 - 128) / 2: two descriptors a connection after the daemon's own headroom.
    assert len(lowered) == 1 and "max_connections=64" in lowered[0], d.log_lines
    assert d.request("GET", "/healthz")[0] == 200
