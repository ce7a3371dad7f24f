"""Runs the real shutterd binary for end-to-end tests: a free port on 127.0.0.1,
a temporary data directory, and its log read from stderr."""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

BINARY = os.environ.get("SHUTTERD_BIN", os.path.join(os.path.dirname(__file__), "../../.build/release/shutterd"))
# Set by scripts/asan-e2e, which runs these tests against a binary built with
# --sanitize=address: every daemon is then stopped with SIGTERM, so LeakSanitizer runs at its exit,
# and a test fails if a daemon's stderr holds a sanitizer report (docs/sanitizers.md).
UNDER_ASAN = os.environ.get("SHUTTERD_ASAN") == "1"
SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|SUMMARY: AddressSanitizer")


class Daemon:
    """One shutterd process."""

    def __init__(self, data_dir, args=(), env=None, preexec_fn=None, binary=None):
        self.binary = binary or BINARY
        self.preexec_fn = preexec_fn
        self.data_dir = str(data_dir)
        self.args = list(args)
        self.env = env or {}
        self.process = None
        self.port = None
        self.log_lines = []
        # Sanitizer reports of earlier runs of this daemon (start() clears log_lines).
        self._earlier_reports = []
        self._listening = threading.Event()

    def start(self, timeout=20):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SHUTTERD_")}
        env.update(self.env)
        self._listening.clear()
        if self.process is not None:
            self._reader.join(10)
            self._earlier_reports += self.sanitizer_report(earlier=False)
        self.log_lines = []
        self.process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0", "--data-dir", self.data_dir, *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            preexec_fn=self.preexec_fn)
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if not self._listening.wait(timeout):
            self.process.kill()
            raise AssertionError("shutterd did not start:\n" + "\n".join(self.log_lines))
        return self

    def _read_log(self):
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log_lines.append(line)
            match = (re.search(r"listening .*address=[^ ]*:(\d+)", line)
                     or re.search(r'"msg":"listening".*"address":"[^"]*:(\d+)"', line))
            if match:
                self.port = int(match.group(1))
                self._listening.set()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends `sig` and returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        status = self.process.wait(timeout)
        # The last lines may still be in the pipe: read them before anyone looks.
        self._reader.join(timeout)
        return status

    def sanitizer_report(self, earlier=True):
        """The lines of an AddressSanitizer or LeakSanitizer report on stderr, from the first (with
        those of the daemon's earlier runs); [] if none."""
        lines = list(self.log_lines)
        for index, line in enumerate(lines):
            if SANITIZER_REPORT.search(line):
                return (self._earlier_reports if earlier else []) + lines[index:]
        return list(self._earlier_reports) if earlier else []

    def wait_for_log(self, *texts, timeout=10):
        """The first log line holding every one of `texts`, waiting for it.

        The daemon writes its log on a thread of its own, and this process reads it on another,
        so a line caused by a request may arrive after the response: never look without waiting."""
        deadline = time.monotonic() + timeout
        while True:
            for line in list(self.log_lines):
                if all(text in line for text in texts):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line with {texts!r}:\n" + "\n".join(self.log_lines))
            time.sleep(0.02)

    def connection(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        """One request on a fresh connection; returns (status, headers dict (lowercase), body bytes)."""
        conn = self.connection()
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None):
        status, headers, data = self.request(method, path, body, headers)
        return status, headers, (json.loads(data) if data else None)

    def raw(self, data, read_until_close=True, timeout=5):
        """Sends raw bytes on a new socket and returns everything read until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(data)
            chunks = []
            try:
                while True:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    if not read_until_close:
                        break
            except socket.timeout:
                pass
            return b"".join(chunks)

    def snap(self):
        status, headers, record = self.json("POST", "/snap")
        assert status == 201, record
        return record


@pytest.fixture
def make_daemon(tmp_path):
    """Factory: make_daemon(args=[...]) starts a daemon; all are stopped after the test."""
    daemons = []

    def factory(args=(), env=None, data_dir=None, preexec_fn=None):
        daemon = Daemon(data_dir or tmp_path / "data", args, env, preexec_fn).start()
        daemons.append(daemon)
        return daemon

    yield factory
    reports = []
    for daemon in daemons:
        if daemon.process.poll() is None:
            if UNDER_ASAN:
                # A clean exit, so LeakSanitizer checks the heap; a daemon that will not stop is
                # killed, as it would be otherwise.
                try:
                    daemon.stop(signal.SIGTERM, timeout=30)
                except subprocess.TimeoutExpired:
                    pass
            if daemon.process.poll() is None:
                daemon.process.kill()
                daemon.process.wait()
        if UNDER_ASAN:
            daemon._reader.join(10)
            reports += daemon.sanitizer_report()
    if reports:
        pytest.fail("sanitizer report from shutterd:\n" + "\n".join(reports[:200]), pytrace=False)


@pytest.fixture
def daemon(make_daemon):
    """A daemon on the test pattern at a small size and a quick frame rate."""
    return make_daemon(["--size", "640x480", "--fps", "60"])
