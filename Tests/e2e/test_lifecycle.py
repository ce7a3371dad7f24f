"""Start-up, restart and shutdown of the real daemon."""

import hashlib
import json
import signal
import socket
import subprocess
import threading
import time

from conftest import BINARY, Daemon


def test_restart_keeps_the_library(make_daemon, tmp_path):
    first = make_daemon(["--size", "320x240", "--fps", "60"])
    records = [first.snap() for _ in range(5)]
    first.request("DELETE", f"/library/{records[2]['id']}")
    assert first.stop() == 0

    second = make_daemon(["--size", "320x240", "--fps", "60"])
    _, _, page = second.json("GET", "/library")
    expected = [r for i, r in enumerate(records) if i != 2]
    assert page["items"] == list(reversed(expected))
    for record in expected:
        status, _, jpeg = second.request("GET", record["url"])
        assert status == 200 and hashlib.sha256(jpeg).hexdigest() == record["sha256"]
    assert second.snap()["id"] > records[-1]["id"]


def test_sigterm_finishes_in_flight_responses_and_exits_zero(make_daemon):
    d = make_daemon(["--size", "320x240", "--fps", "2"])
    result = {}

    def slow_snap():
        # At 2 fps the snap waits up to half a second for its frame: SIGTERM lands meanwhile.
        result["answer"] = d.raw(b"POST /snap HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", timeout=10)

    idle = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    thread = threading.Thread(target=slow_snap)
    thread.start()
    time.sleep(0.1)
    assert d.stop(signal.SIGTERM) == 0
    thread.join()
    assert result["answer"].startswith(b"HTTP/1.1 201"), result["answer"][:100]
    assert b"Connection: close" in result["answer"]
    assert idle.recv(1) == b"", "idle keep-alive connections are closed"
    idle.close()
    assert any("shutting down" in line for line in d.log_lines)
    # The listener is gone.
    try:
        socket.create_connection(("127.0.0.1", d.port), timeout=1).close()
        raise AssertionError("still accepting after shutdown")
    except OSError:
        pass


def test_sigint_exits_zero(make_daemon):
    d = make_daemon(["--size", "320x240"])
    assert d.stop(signal.SIGINT) == 0


def test_logs_one_line_per_request_with_metadata(daemon):
    daemon.request("GET", "/healthz")
    daemon.wait_for_log(" request ", "target=/healthz")
    lines = [l for l in daemon.log_lines if " request " in l and "target=/healthz" in l]
    assert lines, daemon.log_lines
    line = lines[-1]
    for key in ("request_id=", "method=GET", "status=200", "duration_ms="):
        assert key in line, line


def test_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        out = subprocess.run([BINARY, "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d")],
                             capture_output=True, text=True, timeout=20)
    assert out.returncode == 1
    assert "Address already in use" in out.stderr
