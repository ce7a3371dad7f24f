"""Where the daemon listens: several addresses at once, unix sockets (mode 0660, removed on
exit, a stale one replaced, a live one refused), and systemd's socket activation."""

import json
import os
import signal
import socket
import stat
import subprocess
import time

from conftest import BINARY


def curl_unix(path, url="http://localhost/healthz", *extra):
    return subprocess.run(["curl", "-s", "--unix-socket", path, *extra, url], capture_output=True, text=True,
                          timeout=20)


def test_tcp_and_a_unix_socket_at_once(make_daemon, tmp_path):
    sock = str(tmp_path / "shutterd.sock")
    d = make_daemon(["--listen", f"127.0.0.1:0,unix:{sock}", "--size", "320x240"])
    assert d.request("GET", "/healthz")[0] == 200
    assert stat.S_ISSOCK(os.stat(sock).st_mode) and os.stat(sock).st_mode & 0o777 == 0o660
    result = curl_unix(sock, "http://localhost/snap", "-X", "POST")
    record = json.loads(result.stdout)
    assert record["id"] == 1, result.stdout + result.stderr
    d.wait_for_log("listening", f"unix:{sock}")
    assert d.stop() == 0
    assert not os.path.exists(sock)


def test_a_stale_socket_is_replaced_and_a_live_one_refused(make_daemon, tmp_path):
    sock = str(tmp_path / "shutterd.sock")
    # A socket file nobody serves (a daemon killed with -9 leaves one).
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(sock)
    stale.close()
    d = make_daemon(["--listen", f"127.0.0.1:0,unix:{sock}"], data_dir=tmp_path / "a")
    assert json.loads(curl_unix(sock).stdout)["status"] == "ok"
    # Another daemon may not take the live one.
    result = subprocess.run([BINARY, "--listen", f"unix:{sock}", "--data-dir", str(tmp_path / "b")],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode != 0 and "another process serves it" in result.stderr, result.stderr
    assert json.loads(curl_unix(sock).stdout)["status"] == "ok"
    # Nor a file that is not a socket.
    plain = tmp_path / "plain"
    plain.write_text("x")
    result = subprocess.run([BINARY, "--listen", f"unix:{plain}", "--data-dir", str(tmp_path / "c")],
                            capture_output=True, text=True, timeout=20)
    assert result.returncode != 0 and "not a socket" in result.stderr
    assert plain.read_text() == "x"
    assert d.stop() == 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_socket_activation_tcp_and_unix(tmp_path):
    port = free_port()
    sock = str(tmp_path / "activated.sock")
    process = subprocess.Popen(
        ["systemd-socket-activate", "-l", f"127.0.0.1:{port}", "-l", sock, "--",
         BINARY, "--data-dir", str(tmp_path / "d"), "--size", "320x240", "--listen", "127.0.0.1:1"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # systemd-socket-activate starts the daemon on the first connection.
        deadline = time.monotonic() + 20
        while True:
            result = subprocess.run(["curl", "-s", "--max-time", "5", f"http://127.0.0.1:{port}/healthz"],
                                    capture_output=True, text=True)
            if result.stdout:
                break
            assert time.monotonic() < deadline, "socket activation never answered"
            time.sleep(0.2)
        assert json.loads(result.stdout)["status"] == "ok"
        assert json.loads(curl_unix(sock).stdout)["status"] == "ok"
        # The configured address (port 1) was not bound: systemd's sockets replace it.
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", 1)) != 0
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            _, log = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            _, log = process.communicate()
    assert "socket_activation=yes" in log, log
    # The unix socket belongs to whoever made it (systemd): the daemon leaves it.
    assert os.path.exists(sock)
