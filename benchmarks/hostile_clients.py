#!/usr/bin/env python3
"""Hostile and slow clients (issue 15): each attack against a fresh release daemon on the test
pattern, while an honest client snaps (a fresh connection each time) and watches the preview.

    python3 benchmarks/hostile_clients.py [--shutterd .build/release/shutterd] [--short]
        [--only slowloris,silent,...] [--compare OTHER_SHUTTERD]

For each attack: a baseline window with the honest client alone, then the attack window, then a
settling pause. Reported per attack: the honest snap's p50/p99 latency and errors before and
during, the preview's frames per second before and during, the daemon's RSS before/peak/after,
its open descriptors and threads, and what the attackers got (statuses, closes). `--short` runs
each attack for a few seconds with smaller counts and shorter server timeouts, so the limits
fire within the window (Tests/e2e/test_hostile_clients.py runs it and asserts on the results).

Attackers connect from other loopback addresses (127.0.0.2 and up) than the honest client
(127.0.0.1): the per-address connection limit is what keeps one attacker from taking every
slot, and it must not count the honest client against the attacker's share.

Standard library only. Prints one Markdown table; asserts nothing.
"""

import argparse
import errno
import http.client
import json
import os
import re
import resource
import selectors
import socket
import statistics
import subprocess
import tempfile
import threading
import time

VIEW_TOKEN = "view-token-0123456789abcdef"
SNAP_TOKEN = "snap-token-0123456789abcdef"
ADMIN_TOKEN = "admin-token-0123456789abcdef"


# MARK: The daemon


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


class Daemon:
    """One shutterd on the test pattern in a temporary data directory; its log is kept."""

    def __init__(self, binary, args):
        self.data_dir = tempfile.TemporaryDirectory(prefix="hostile-")
        self.log_lines = []
        size = [] if "--size" in args else ["--size", "640x480"]
        self.process = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--data-dir", self.data_dir.name, "--camera", "test-pattern",
             *size, "--fps", "30", "--access-log", "false", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = None
        for raw in self.process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log_lines.append(line)
            match = re.search(r"listening .*address=[^ ]*:(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        if self.port is None:
            raise SystemExit("shutterd did not start:\n" + "\n".join(self.log_lines))
        # Keep reading its log so it never blocks on a full pipe.
        threading.Thread(target=self._read_log, daemon=True).start()
        self.pid = self.process.pid

    def _read_log(self):
        for raw in self.process.stderr:
            self.log_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def sample(self):
        return rss_kib(self.pid), descriptors(self.pid), threads(self.pid)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.data_dir.cleanup()


class Sampler(threading.Thread):
    """The daemon's RSS, descriptors and threads, five times a second, tagged with the phase."""

    def __init__(self, daemon):
        super().__init__(daemon=True)
        self.daemon_under_test = daemon
        self.phase = "baseline"
        self.samples = []
        self.running = True

    def run(self):
        while self.running and self.daemon_under_test.process.poll() is None:
            try:
                self.samples.append((self.phase, *self.daemon_under_test.sample()))
            except (FileNotFoundError, ProcessLookupError):
                break
            time.sleep(0.2)

    def of(self, phase):
        return [sample[1:] for sample in self.samples if sample[0] == phase]


# MARK: The honest client


def request(port, method, path, body=None, headers=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class HonestClient:
    """Snaps every `interval` seconds on a fresh connection and watches /preview.mjpg, recording
    each snap's latency and status and each preview part's arrival, tagged with the phase."""

    def __init__(self, port, interval, headers=None):
        self.port = port
        self.interval = interval
        self.headers = headers or {}
        self.phase = "baseline"
        self.snaps = []  # (phase, seconds, status or error name)
        self.frames = []  # (phase, arrival)
        self.preview_drops = []
        self.running = True
        self.threads = [threading.Thread(target=self._snap_loop, daemon=True),
                        threading.Thread(target=self._watch_loop, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _snap_loop(self):
        while self.running:
            started = time.monotonic()
            phase = self.phase
            try:
                status, _ = request(self.port, "POST", "/snap", headers=self.headers)
            except (OSError, http.client.HTTPException) as error:
                status = type(error).__name__
            self.snaps.append((phase, time.monotonic() - started, status))
            time.sleep(max(0.0, self.interval - (time.monotonic() - started)))

    def _watch_loop(self):
        marker = b"--shutterframe\r\n"
        while self.running:
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                head = "".join(f"{name}: {value}\r\n" for name, value in self.headers.items())
                sock.sendall(f"GET /preview.mjpg HTTP/1.1\r\nHost: localhost\r\n{head}\r\n".encode())
                tail = b""
                while self.running:
                    chunk = sock.recv(262144)
                    if not chunk:
                        raise ConnectionResetError("closed")
                    data = tail + chunk
                    count = data.count(marker)
                    now = time.monotonic()
                    self.frames.extend((self.phase, now) for _ in range(count))
                    tail = data[-(len(marker) - 1):]
                sock.close()
            except OSError as error:
                self.preview_drops.append((self.phase, type(error).__name__))
                time.sleep(0.2)

    def stop(self):
        self.running = False
        for thread in self.threads:
            thread.join(15)

    def snap_figures(self, phase):
        times = sorted(seconds for tag, seconds, status in self.snaps if tag == phase and status == 201)
        failures = [status for tag, _, status in self.snaps if tag == phase and status != 201]
        if not times:
            return None, None, len(failures), failures
        p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
        return statistics.median(times), p99, len(failures), failures

    def fps(self, phase, seconds):
        return sum(1 for tag, _ in self.frames if tag == phase) / seconds


# MARK: Attacker sockets


def attacker_address(index):
    """The loopback address attacker group `index` connects from (127.0.0.2 and up)."""
    return f"127.0.0.{2 + index}"


def connect(port, source, timeout=3):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    return sock


def read_status(data):
    """The status of the first response in `data`, or None."""
    match = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return int(match.group(1)) if match else None


class Outcomes:
    """What the attackers got: a count per outcome (a status, `closed` without an answer,
    `reset`, `open` at the end of the window, `refused` at connect)."""

    def __init__(self):
        self.counts = {}

    def add(self, outcome, count=1):
        self.counts[outcome] = self.counts.get(outcome, 0) + count

    def describe(self):
        order = sorted(self.counts, key=lambda key: (not str(key).isdigit(), str(key)))
        return ", ".join(f"{key}: {self.counts[key]}" for key in order)


def settle(sock, limit=16 << 20, wait=0.0):
    """Reads what the server sent (up to `limit` bytes, waiting `wait` for more) and says how the
    connection ended: the first status (if any) and `closed`, `reset` or `open`."""
    sock.setblocking(False)
    first = b""
    total = 0
    deadline = time.monotonic() + wait
    while True:
        try:
            chunk = sock.recv(262144)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return read_status(first), "open"
            time.sleep(0.01)
            continue
        except ConnectionResetError:
            return read_status(first), "reset"
        if not chunk:
            return read_status(first), "closed"
        if len(first) < 64:
            first += chunk[:64]
        total += len(chunk)
        if total >= limit:
            return read_status(first), "open"


def record_endings(outcomes, socks, wait=0.0):
    for sock in socks:
        status, ending = settle(sock, wait=wait)
        outcomes.add(f"{status} then {ending}" if status else ending)
        sock.close()


# MARK: The attacks
#
# Each takes (daemon, scale, window, stop) and returns an Outcomes; `stop` is set when the
# window ends. `scale` is a dict of counts and intervals, full or short.


def slowloris(daemon, scale, window, stop):
    """Connections sending a request head one byte every few seconds, past the per-address limit."""
    outcomes = Outcomes()
    head = b"GET /status HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 4096
    socks = []
    for _ in range(scale["slowloris"]):
        try:
            socks.append(connect(daemon.port, attacker_address(0)))
        except OSError:
            outcomes.add("refused")
    sent = {sock: 0 for sock in socks}
    while not stop.wait(scale["slowloris_every"]):
        for sock in list(sent):
            try:
                sock.send(head[sent[sock]:sent[sock] + 1])
                sent[sock] += 1
            except OSError:
                # Answered (a 503 past the limit, a 408 after the timeout) and closed: see below.
                del sent[sock]
    record_endings(outcomes, socks)
    return outcomes


def silent(daemon, scale, window, stop, groups=1):
    """Connections that never send a byte, `scale['silent']` from each of `groups` addresses;
    each one the server closes is opened again at once, and each one refused a tenth of a second
    later, as a determined attacker would: any slot that frees is taken again."""
    outcomes = Outcomes()
    selector = selectors.DefaultSelector()
    per_group = scale["silent"]
    retries = []  # (when, group): refused connections to open again

    def open_one(group):
        try:
            sock = connect(daemon.port, attacker_address(group))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, group)
        except OSError:
            outcomes.add("refused")

    for group in range(groups):
        for _ in range(per_group):
            open_one(group)
    while not stop.is_set():
        for key, _ in selector.select(0.05):
            sock, group = key.fileobj, key.data
            status, ending = settle(sock)
            if ending == "open":
                continue
            outcomes.add(f"{status} then {ending}" if status else ending)
            selector.unregister(sock)
            sock.close()
            # A slot the server took back is taken again at once; a refusal a moment later.
            if status is None:
                open_one(group)
            else:
                retries.append((time.monotonic() + 0.1, group))
        now = time.monotonic()
        due = [group for when, group in retries if when <= now]
        retries = [(when, group) for when, group in retries if when > now]
        for group in due:
            open_one(group)
    socks = [key.fileobj for key in selector.get_map().values()]
    selector.close()
    record_endings(outcomes, socks)
    return outcomes


def silent_many(daemon, scale, window, stop):
    """Silent connections from several addresses, together past `max_connections`."""
    return silent(daemon, scale, window, stop, groups=scale["silent_groups"])


def slow_readers(daemon, scale, window, stop):
    """Preview viewers that read one byte a second, and viewers that never read."""
    outcomes = Outcomes()
    slow, deaf = [], []
    for index in range(scale["slow_readers"] * 2):
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # A small receive buffer, so the server meets a full window soon.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.bind((attacker_address(0), 0))
            sock.settimeout(3)
            sock.connect(("127.0.0.1", daemon.port))
            sock.sendall(b"GET /preview.mjpg HTTP/1.1\r\nHost: localhost\r\n\r\n")
            (slow if index % 2 == 0 else deaf).append(sock)
        except OSError:
            outcomes.add("refused")
    for sock in slow:
        sock.setblocking(False)
    closed_slow = set()
    while not stop.wait(1.0):
        for sock in slow:
            if sock in closed_slow:
                continue
            try:
                if sock.recv(1) == b"":
                    closed_slow.add(sock)
            except BlockingIOError:
                pass
            except OSError:
                closed_slow.add(sock)
    slow_outcomes, deaf_outcomes = Outcomes(), Outcomes()
    for sock in slow:
        slow_outcomes.add("closed" if sock in closed_slow else "open")
        sock.close()
    record_endings(deaf_outcomes, deaf)
    for key, count in slow_outcomes.counts.items():
        outcomes.add(f"1 B/s {key}", count)
    for key, count in deaf_outcomes.counts.items():
        outcomes.add(f"never reading {key}", count)
    return outcomes


def idle_event_streams(daemon, scale, window, stop):
    """Event streams that are opened and then left alone (read only at the end)."""
    outcomes = Outcomes()
    socks = []
    per_address = 200
    for index in range(scale["event_streams"]):
        try:
            sock = connect(daemon.port, attacker_address(index // per_address))
            sock.sendall(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
            socks.append(sock)
        except OSError:
            outcomes.add("refused")
    stop.wait()
    for sock in socks:
        status, ending = settle(sock, limit=65536)
        outcomes.add(f"{status} then {ending}" if status else ending)
        sock.close()
    return outcomes


def pipeline(daemon, stop, request, clients, count):
    """`clients` connections each sending `request` `count` times as fast as the server takes
    them, and reading none of the answers."""
    outcomes = Outcomes()
    requests = request * count
    socks = []
    for _ in range(clients):
        try:
            sock = connect(daemon.port, attacker_address(0))
            sock.setblocking(False)
            socks.append(sock)
        except OSError:
            outcomes.add("refused")
    sent = {sock: 0 for sock in socks}
    total = 0
    while not stop.is_set():
        progress = False
        for sock in socks:
            if sent[sock] >= len(requests):
                continue
            try:
                count = sock.send(requests[sent[sock]:sent[sock] + 65536])
                sent[sock] += count
                total += count
                progress = True
            except BlockingIOError:
                pass
            except OSError:
                sent[sock] = len(requests)
        if not progress:
            stop.wait(0.05)
    outcomes.add("requests sent", total // len(request))
    record_endings(outcomes, socks)
    return outcomes


def pipeliners(daemon, scale, window, stop):
    """Clients that pipeline thousands of GET /status each and read none of the answers."""
    return pipeline(daemon, stop, b"GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n",
                    scale["pipeliners"], scale["pipelined_requests"])


def snap_pipeliners(daemon, scale, window, stop):
    """Clients that pipeline POST /snap and read none of the answers: each snap holds its picture
    until it is stored, so this is where memory would go."""
    outcomes = pipeline(daemon, stop, b"POST /snap HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n",
                        scale["snap_pipeliners"], scale["pipelined_snaps"])
    status, body = request(daemon.port, "GET", "/metrics")
    for line in body.decode().splitlines():
        match = re.match(r'shutterd_snaps_total\{result="(\w+)"\} (\d+)', line)
        if match and match.group(2) != "0":
            outcomes.add(f"snaps {match.group(1)}", int(match.group(2)))
    return outcomes


def thumbnail_sweep(daemon, scale, window, stop):
    """Every thumbnail width from 16 to 4096 (or every n-th), over four keep-alive connections,
    of the newest picture; then the thumbnail files on disk."""
    status, body = request(daemon.port, "POST", "/snap")
    picture = json.loads(body)["id"]
    widths = list(range(16, 4097, scale["thumbnail_step"]))
    outcomes = Outcomes()
    lock = threading.Lock()

    def sweep(part):
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30, source_address=(attacker_address(0), 0))
        for width in part:
            if stop.is_set():
                break
            try:
                conn.request("GET", f"/media/{picture}.jpg?width={width}")
                response = conn.getresponse()
                response.read()
                with lock:
                    outcomes.add(response.status)
            except (OSError, http.client.HTTPException) as error:
                with lock:
                    outcomes.add(type(error).__name__)
                conn.close()
        conn.close()

    workers = [threading.Thread(target=sweep, args=(widths[index::4],)) for index in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    thumbnails = [name for _, _, names in os.walk(daemon.data_dir.name) for name in names
                  if name.startswith(f"{picture}-") and name.endswith(".jpg")]
    outcomes.add("thumbnail files", len(thumbnails))
    stop.wait()
    return outcomes


def job_slots(daemon, scale, window, stop):
    """Anonymous (view) and view-token clients trying to fill the job slots; then the honest
    snap-scope client schedules one."""
    outcomes = Outcomes()
    spec = json.dumps({"kind": "interval", "every": 60, "count": 1000}).encode()
    attempts = 0
    while not stop.is_set() and attempts < scale["job_attempts"]:
        for headers, who in (({}, "anonymous"), ({"Authorization": f"Bearer {VIEW_TOKEN}"}, "view")):
            headers["Content-Type"] = "application/json"
            try:
                status, _ = request(daemon.port, "POST", "/jobs", spec, headers)
            except (OSError, http.client.HTTPException) as error:
                status = type(error).__name__
            outcomes.add(f"{who} {status}")
        attempts += 1
    status, body = request(daemon.port, "POST", "/jobs", spec,
                           {"Authorization": f"Bearer {SNAP_TOKEN}", "Content-Type": "application/json"})
    outcomes.add(f"honest snap-scope job {status}")
    if status == 201:
        request(daemon.port, "DELETE", f"/jobs/{json.loads(body)['id']}",
                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    stop.wait()
    return outcomes


ATTACKS = {
    "slowloris": (slowloris, "slowloris: {slowloris} connections, a header byte every {slowloris_every} s"),
    "silent": (silent, "{silent} silent connections from one address (reopened when closed)"),
    "silent-many": (silent_many, "{silent} silent connections from each of {silent_groups} addresses"),
    "slow-readers": (slow_readers, "{slow_readers} preview readers at 1 B/s + {slow_readers} never reading"),
    "event-streams": (idle_event_streams, "{event_streams} idle /events streams"),
    "pipeliners": (pipeliners, "{pipeliners} clients pipelining {pipelined_requests} GET /status, reading nothing"),
    "snap-pipeliners": (snap_pipeliners, "{snap_pipeliners} clients pipelining {pipelined_snaps} POST /snap, reading nothing"),
    "thumbnails": (thumbnail_sweep, "thumbnail sweep, widths 16 to 4096 step {thumbnail_step}"),
    "job-slots": (job_slots, "POST /jobs as anonymous (view) and a view token, {job_attempts} times each"),
}

FULL = {
    "baseline": 10, "window": 30, "settle": 5, "snap_every": 0.5,
    "slowloris": 300, "slowloris_every": 3, "silent": 300, "silent_groups": 5,
    "slow_readers": 50, "event_streams": 1000, "pipeliners": 100, "pipelined_requests": 20000, "snap_pipeliners": 100, "pipelined_snaps": 2000,
    "thumbnail_step": 1, "job_attempts": 200,
    # The defaults: max_connections 1024, a quarter of it per address.
    "max_per_peer": 256,
    "server_args": [],
}

SHORT = {
    "baseline": 2, "window": 5, "settle": 2, "snap_every": 0.25,
    "slowloris": 40, "slowloris_every": 0.5, "silent": 40, "silent_groups": 4,
    "slow_readers": 8, "event_streams": 200, "pipeliners": 20, "pipelined_requests": 5000, "snap_pipeliners": 20, "pipelined_snaps": 200,
    "thumbnail_step": 61, "job_attempts": 20,
    # Timeouts that fire within the window, and limits the counts above go past.
    "max_per_peer": 32,
    "server_args": ["--header-timeout-ms", "2000", "--request-timeout-ms", "2000",
                    "--preview-stall-timeout-ms", "2000", "--write-timeout-ms", "2000",
                    "--max-connections", "100", "--max-connections-per-peer", "32"],
}


def server_args_for(attack, scale, token_file):
    args = list(scale["server_args"])
    if attack == "job-slots":
        args += ["--auth-tokens", token_file, "--anonymous", "view"]
    if attack == "snap-pipeliners":
        # The size of the probe (the default): each picture held is about 200 KB.
        args += ["--size", "1280x720"]
    if attack == "event-streams":
        # Every stream from a few addresses: the per-address limit is not what this measures.
        count = str(scale["event_streams"] + 64)
        args += ["--max-connections", count, "--max-connections-per-peer", count]
    return args


def run_attack(binary, attack, scale):
    """One attack against a fresh daemon; returns a dict of figures (see `row`)."""
    function, label = ATTACKS[attack]
    with tempfile.TemporaryDirectory(prefix="hostile-tokens-") as token_dir:
        token_file = os.path.join(token_dir, "tokens")
        with open(token_file, "w") as tokens:
            tokens.write(f"view {VIEW_TOKEN}\nsnap {SNAP_TOKEN}\nadmin {ADMIN_TOKEN}\n")
        os.chmod(token_file, 0o600)
        daemon = Daemon(binary, server_args_for(attack, scale, token_file))
    try:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if attack == "job-slots" else {}
        sampler = Sampler(daemon)
        sampler.start()
        honest = HonestClient(daemon.port, scale["snap_every"], headers)
        time.sleep(scale["baseline"])
        before = daemon.sample()
        stop = threading.Event()
        result = {}

        def attack_thread():
            try:
                result["outcomes"] = function(daemon, scale, scale["window"], stop)
            except Exception as error:  # reported in the table, not raised from a thread
                result["error"] = repr(error)

        sampler.phase = honest.phase = "attack"
        attacker = threading.Thread(target=attack_thread, daemon=True)
        attacker.start()
        time.sleep(scale["window"])
        sampler.phase = honest.phase = "settle"
        stop.set()
        attacker.join(120)
        time.sleep(scale["settle"])
        after = daemon.sample()
        honest.phase = "after"
        time.sleep(max(1.0, scale["snap_every"] * 3))
        honest.stop()
        sampler.running = False
        sampler.join()
        during = sampler.of("attack") + sampler.of("settle")
        alive = daemon.process.poll() is None
        return {
            "attack": attack,
            "label": label.format(**scale),
            "outcomes": result["outcomes"].counts if "outcomes" in result else {},
            "outcomes_text": result["outcomes"].describe() if "outcomes" in result else result.get("error"),
            "snap_before": honest.snap_figures("baseline"),
            "snap_during": honest.snap_figures("attack"),
            "snap_after": honest.snap_figures("after"),
            "fps_before": honest.fps("baseline", scale["baseline"]),
            "fps_during": honest.fps("attack", scale["window"]),
            "preview_drops": honest.preview_drops,
            "rss_before": before[0], "rss_peak": max(sample[0] for sample in during) if during else before[0],
            "rss_after": after[0],
            "fds_before": before[1], "fds_peak": max(sample[1] for sample in during) if during else before[1],
            "fds_after": after[1],
            "threads_before": before[2], "threads_peak": max(sample[2] for sample in during) if during else before[2],
            "alive": alive,
            "log": list(daemon.log_lines),
        }
    finally:
        daemon.stop()


def milliseconds(value):
    return "-" if value is None else f"{value * 1000:.0f}"


def row(figures):
    p50b, p99b, _, _ = figures["snap_before"]
    p50d, p99d, failed, _ = figures["snap_during"]
    mib = lambda kib: f"{kib / 1024:.0f}"
    return (f"| {figures['label']} | {figures['outcomes_text']} "
            f"| {milliseconds(p50b)}/{milliseconds(p99b)} | {milliseconds(p50d)}/{milliseconds(p99d)} | {failed} "
            f"| {figures['fps_before']:.0f} / {figures['fps_during']:.0f} "
            f"| {mib(figures['rss_before'])} / {mib(figures['rss_peak'])} / {mib(figures['rss_after'])} "
            f"| {figures['fds_before']} / {figures['fds_peak']} / {figures['fds_after']} "
            f"| {figures['threads_before']} / {figures['threads_peak']} |")


HEADER = ("| attack | what the attackers got | snap p50/p99 ms before | during | snaps failed during "
          "| preview fps before / during | RSS MiB before / peak / after | fds before / peak / after "
          "| threads before / peak |\n|---|---|---|---|---|---|---|---|---|")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shutterd", default=".build/release/shutterd")
    parser.add_argument("--short", action="store_true", help="a few seconds per attack, smaller counts")
    parser.add_argument("--only", default=",".join(ATTACKS), help="comma-separated attacks: " + ", ".join(ATTACKS))
    parser.add_argument("--compare", metavar="SHUTTERD",
                        help="another build (main's, say) to run each attack against too, its row beside ours")
    options = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    scale = SHORT if options.short else FULL
    builds = [("", options.shutterd)]
    if options.compare:
        builds = [("this build: ", options.shutterd), ("compared: ", options.compare)]
    rows = []
    for attack in options.only.split(","):
        for name, binary in builds:
            figures = run_attack(binary, attack, scale)
            figures["label"] = name + figures["label"]
            rows.append(row(figures))
            print(rows[-1], flush=True)
    print()
    print(HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
