"""systemd integration over the real binary: sd_notify datagrams read from a socket the test
makes (READY, STATUS, WATCHDOG, STOPPING), abstract sockets too, and a wedged capture thread
(the emulated camera's DQBUF never returns) that stops the watchdog so systemd would restart it."""

import os
import signal
import socket
import time

from emucam import emucam_env


class NotifySocket:
    """A datagram socket standing in for systemd's notification socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []

    def receive(self, until, timeout=10.0):
        """Reads messages until `until(messages)` holds; returns them all."""
        deadline = time.monotonic() + timeout
        while not until(self.messages):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out; got {self.messages}"
            self.sock.settimeout(remaining)
            self.messages.append(self.sock.recv(4096).decode())
        return self.messages

    def drain(self):
        """Takes every message already queued."""
        self.sock.setblocking(False)
        try:
            while True:
                self.messages.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            pass
        finally:
            self.sock.setblocking(True)

    def quiet_for(self, seconds, word):
        """Reads for `seconds`; returns the messages containing `word` that arrived."""
        deadline = time.monotonic() + seconds
        seen = []
        while (remaining := deadline - time.monotonic()) > 0:
            self.sock.settimeout(remaining)
            try:
                message = self.sock.recv(4096).decode()
            except socket.timeout:
                break
            self.messages.append(message)
            if word in message:
                seen.append(message)
        return seen


def lines(messages):
    return [line for message in messages for line in message.split("\n")]


def test_ready_status_watchdog_and_stopping(make_daemon, tmp_path):
    notify = NotifySocket(str(tmp_path / "notify"))
    d = make_daemon(["--size", "320x240", "--fps", "30"],
                    env={"NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "600000"})
    messages = notify.receive(lambda m: "READY=1" in lines(m) and lines(m).count("WATCHDOG=1") >= 3)
    assert lines(messages).count("READY=1") == 1
    assert "STATUS=streaming 320x240 at 30 fps, 0 viewers" in lines(messages)
    # Serving while it says so.
    assert d.request("GET", "/healthz")[0] == 200
    d.process.send_signal(signal.SIGTERM)
    notify.receive(lambda m: "STOPPING=1" in lines(m))
    assert d.process.wait(20) == 0


def test_an_abstract_notify_socket(make_daemon):
    name = f"shutterd-test-{os.getpid()}-{time.monotonic_ns()}"
    notify = NotifySocket("\0" + name)
    make_daemon(["--size", "320x240"], env={"NOTIFY_SOCKET": "@" + name})
    messages = notify.receive(lambda m: "READY=1" in lines(m))
    # No WATCHDOG_USEC: no watchdog messages.
    assert not [line for line in lines(messages) if line.startswith("WATCHDOG")]


def test_a_missing_camera_is_ready_and_says_so(make_daemon, tmp_path):
    notify = NotifySocket(str(tmp_path / "notify"))
    make_daemon(["--camera", "/dev/video0", "--reopen-interval-ms", "300"],
                env={**emucam_env(open_error="ENOENT"), "NOTIFY_SOCKET": str(tmp_path / "notify")})
    messages = notify.receive(lambda m: "READY=1" in lines(m))
    assert any(line.startswith("STATUS=camera gone, reopening") for line in lines(messages)), messages


def test_a_wedged_capture_thread_stops_the_watchdog(make_daemon, tmp_path):
    notify = NotifySocket(str(tmp_path / "notify"))
    d = make_daemon(["--camera", "/dev/video0", "--size", "640x480", "--fps", "30", "--warmup-ms", "0"],
                    env={**emucam_env(hang_after=45), "NOTIFY_SOCKET": str(tmp_path / "notify"),
                         "WATCHDOG_USEC": "1000000"})
    notify.receive(lambda m: "READY=1" in lines(m) and "WATCHDOG=1" in lines(m))
    # 45 frames at 30 fps, then DQBUF hangs: within two intervals the pings stop for good.
    deadline = time.monotonic() + 10
    while not any("withholding WATCHDOG=1" in line for line in d.log_lines):
        assert time.monotonic() < deadline, "\n".join(d.log_lines)
        time.sleep(0.05)
    # What was sent before the wedge is still queued in the socket: take it, then listen.
    notify.drain()
    assert notify.quiet_for(2.0, "WATCHDOG=1") == []
    # The event loop itself still answers: it is the capture thread that is stuck.
    assert d.request("GET", "/healthz")[0] in (200, 503)
    d.process.kill()
    d.process.wait()
