#!/usr/bin/env python3
"""The soak (issue 15): one release daemon under a steady mixed load for a long time, sampled
every minute; its memory, descriptors, threads and files must level off, and nothing may fail.

    python3 benchmarks/soak.py [--minutes 30] [--shutterd .build/release/shutterd] [--json FILE]
    python3 benchmarks/soak.py --minutes 1440 --json soak-24h.json      # the 24-hour run
    python3 benchmarks/soak.py --short                                  # about 75 s (the e2e test)
    python3 benchmarks/soak.py --report soak-24h.json                   # a saved run's table again
    [--outbox-max-events N] (default 1500; the daemon's own default is 100000) [--keep]

What runs against it, all at once, for the whole run (a fresh data directory, the test pattern at
640x480 and 30 fps, the access log off):

- an interval job at 2 pictures a second (`every` 0.5; each job takes 600 shots, and a new one is
  created as soon as the last ends, so job creation and completion are part of the load);
- `POST /snap` every second, each on a new connection;
- 20 viewers of `/preview.mjpg`, all read by one selector thread as fast as the daemon sends;
- 10 `/events` streams, each checking that every event's id is the previous one's plus one;
- a polling script following `/library?after=` cursors with `wait=` (long-polls): every picture
  once, in increasing id order;
- retention on: at most 600 pictures (`--retention-min-age-s 0`), so from about the fourth minute
  retention deletes as fast as pictures arrive;
- the event history kept to 1,500 events (`--outbox-max-events`; about four minutes of them), so
  the oldest are pruned all along and the catalog's file can level off within the run (with the
  default 100,000 it grows for about four hours, then levels off);
- the MQTT sink publishing every event (and each picture's JPEG) to a real Mosquitto broker that
  is stopped for a minute and started for a minute, over and over (Tests/e2e/mqtt_broker.py).

Sampled each minute (`--short`: every 10 s): the daemon's RSS, open descriptors (/proc/PID/fd),
threads (/proc/PID/status), the SQLite catalog's size (catalog.sqlite + -wal), the data
directory's size, CPU used, pictures kept, and the machine's load.

Counted as errors: any answer but 201 to a snap or a job, but 200 to a long-poll; a preview or
event stream that ends or stalls; an event id that is not the previous one's plus one; a picture
the polling script is given twice or out of order; a daemon log line at level error or critical;
the MQTT sink not caught up a minute after the last flap; the daemon dying or not exiting 0 on
SIGTERM; and at the end: the pictures the polling script and the event streams believe exist
differing from the library, the catalog's rows differing from the files, a temporary file left,
or a picture that djpeg cannot decode.

Flat, after the settling time (5 minutes; a third of the run when shorter), against the sample
taken at that time: RSS at most max(10 %, 8 MiB) above it; descriptors at most 8 above it and
threads at most 2 above it (snaps, long-polls and reconnecting clients come and go); the SQLite
files and the data directory at most max(25 %, 8 MiB) above it (retention bounds both; the WAL
grows and shrinks between checkpoints).

Prints one Markdown table of the samples and the verdict; exits 1 unless flat with zero errors
after the whole time asked. The first Ctrl-C (or SIGTERM) ends the run early but still runs the
end-of-run checks and prints the table and verdict of the minutes done (exit 1: it did not run
its time), so a day-long run stopped at hour 20 is not lost; a second one aborts at once. The
daemon and the broker run in sessions of their own, so a Ctrl-C at the terminal reaches only
this script.
Needs: swift build -c release --product shutterd; Debian's mosquitto and djpeg
(libjpeg-turbo-progs); paho-mqtt and pytest (the e2e helpers it imports). Data under
$SHUTTER_BENCH_DATA (default /var/tmp). Tests/e2e/test_soak.py runs `--short`.
"""

import argparse
import http.client
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

from conftest import Daemon  # noqa: E402
from event_stream import EventStream  # noqa: E402
from faults import catalog_state  # noqa: E402
from mqtt_broker import Broker  # noqa: E402

DATA_ROOT = os.environ.get("SHUTTER_BENCH_DATA", "/var/tmp")
MIB = 1 << 20

# The full run's settings; `--short` replaces some (SHORT below).
FULL = {
    "sample_every_s": 60,
    "settle_s": 300,
    "retention_max_pictures": 600,
    "job_shots": 600,
    "flap_every_s": 60,
    "outbox_max_events": 1500,
    "viewers": 20,
    "event_streams": 10,
}
SHORT = dict(FULL, sample_every_s=10, settle_s=20, retention_max_pictures=30, job_shots=20, flap_every_s=12,
             outbox_max_events=200)

# What "flat" allows above the sample at the settling time (see the docstring).
RSS_SLACK = (0.10, 8 * MIB)
FILE_SLACK = (0.25, 8 * MIB)
FD_SLACK = 8
THREAD_SLACK = 2

ERROR_LINE = re.compile(r"^(?:<\d>)?\S+ (error|critical) ")
# A warning's message, without its key=value fields: counted and reported, not an error (the
# broker going away is one).
WARNING_LINE = re.compile(r"^(?:<\d>)?\S+ warning \S+: (.*?)(?= [a-z_]+=|$)")


# MARK: Errors


class Errors:
    """Every error seen, with the second of the run it happened at; thread-safe."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started = time.monotonic()
        self.items = []  # (seconds, kind, detail)
        self.kinds = {}  # kind -> count

    def add(self, kind, detail):
        with self.lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            # The first thousand are kept: a day-long run that goes wrong must not fill memory.
            if len(self.items) < 1000:
                self.items.append((round(time.monotonic() - self.started, 1), kind, str(detail)[:300]))

    def count(self):
        with self.lock:
            return sum(self.kinds.values())

    def by_kind(self):
        with self.lock:
            return dict(self.kinds)


def call(port, method, path, body=None, timeout=40):
    """(status, parsed JSON or None) on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers={"Host": "localhost"})
        response = conn.getresponse()
        data = response.read()
        is_json = data and "json" in response.getheader("Content-Type", "")
        return response.status, (json.loads(data) if is_json else None)
    finally:
        conn.close()


class Activity(threading.Thread):
    """A thread that loops until `stop()`; its loop records into `errors`."""

    def __init__(self, port, errors):
        super().__init__(daemon=True)
        self.port = port
        self.errors = errors
        self.stopping = threading.Event()

    def stop(self):
        self.stopping.set()


# MARK: The clients


class Snapper(Activity):
    """POST /snap every second on a new connection; anything but 201 is an error."""

    def __init__(self, port, errors):
        super().__init__(port, errors)
        self.latencies = []
        self.created = 0

    def run(self):
        next_at = time.monotonic()
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                status, _ = call(self.port, "POST", "/snap", timeout=15)
                if status == 201:
                    self.created += 1
                    self.latencies.append(time.monotonic() - started)
                else:
                    self.errors.add("snap", f"status {status}")
            except (OSError, http.client.HTTPException) as error:
                self.errors.add("snap", repr(error))
            next_at += 1.0
            self.stopping.wait(max(0.0, next_at - time.monotonic()))


class JobKeeper(Activity):
    """An interval job at 2 pictures a second for the whole run: creates one, waits (a long-poll)
    for it to end, checks it ended `done`, and creates the next."""

    def __init__(self, port, errors, shots):
        super().__init__(port, errors)
        self.shots = shots
        self.jobs = 0
        self.taken = 0
        self.missed = 0
        self.current = None

    def run(self):
        while not self.stopping.is_set():
            try:
                status, job = call(self.port, "POST", "/jobs",
                                   {"kind": "interval", "every": 0.5, "count": self.shots, "label": "soak"})
                if status != 201:
                    self.errors.add("job", f"POST /jobs answered {status}: {job}")
                    self.stopping.wait(1)
                    continue
                self.jobs += 1
                self.current = job["id"]
                while not self.stopping.is_set() and job["state"] in ("scheduled", "running"):
                    status, job = call(self.port, "GET", f"/jobs/{self.current}?wait=5&state_not={job['state']}")
                    if status != 200:
                        self.errors.add("job", f"GET /jobs/{self.current} answered {status}")
                        self.stopping.wait(1)
                        break
                if job["state"] in ("scheduled", "running"):
                    continue  # stopping: finish() cancels it
                self.taken += job["taken"]
                self.missed += job["missed"]
                if job["state"] != "done":
                    self.errors.add("job", f"job {job['id']} ended {job['state']}: {job.get('last_failure')}")
            except (OSError, http.client.HTTPException, KeyError) as error:
                self.errors.add("job", repr(error))
                self.stopping.wait(1)

    def finish(self):
        """Stops creating jobs and cancels the running one, counting its shots."""
        self.stop()
        self.join(30)
        if self.current is not None:
            status, job = call(self.port, "DELETE", f"/jobs/{self.current}")
            if status == 200 and job["state"] == "cancelled":
                self.taken += job["taken"]
                self.missed += job["missed"]


class PreviewViewers(Activity):
    """`count` viewers of /preview.mjpg on one selector thread, each read as fast as it comes.
    A stream that ends, fails or sends nothing for 10 s is an error (and is reopened)."""

    MARKER = b"--shutterframe\r\n"

    def __init__(self, port, errors, count):
        super().__init__(port, errors)
        self.count = count
        self.frames = 0
        self.bytes = 0
        self.lock = threading.Lock()
        self.selector = selectors.DefaultSelector()

    def _open(self):
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(b"GET /preview.mjpg HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.setblocking(False)
        self.selector.register(sock, selectors.EVENT_READ, {"tail": b"", "last": time.monotonic(), "head": False})

    def _drop(self, key, why):
        self.selector.unregister(key.fileobj)
        key.fileobj.close()
        if self.stopping.is_set():
            return
        self.errors.add("preview", why)
        try:
            self._open()
        except OSError as error:
            self.errors.add("preview", f"reopen: {error!r}")

    def run(self):
        for _ in range(self.count):
            self._open()
        while not self.stopping.is_set():
            for key, _ in self.selector.select(timeout=1):
                state = key.data
                try:
                    chunk = key.fileobj.recv(1 << 18)
                except OSError as error:
                    self._drop(key, repr(error))
                    continue
                if not chunk:
                    self._drop(key, "the stream ended")
                    continue
                data = state["tail"] + chunk
                if not state["head"]:
                    if not data.startswith(b"HTTP/1.1 200"):
                        self._drop(key, f"answered {data[:40]!r}")
                        continue
                    state["head"] = True
                with self.lock:
                    self.frames += data.count(self.MARKER)
                    self.bytes += len(chunk)
                state["tail"] = data[-(len(self.MARKER) - 1):]
                state["last"] = time.monotonic()
            now = time.monotonic()
            for key in list(self.selector.get_map().values()):
                if now - key.data["last"] > 10:
                    self._drop(key, "no bytes for 10 s")
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()

    def frames_so_far(self):
        with self.lock:
            return self.frames


class EventFollower(Activity):
    """One /events stream: every event's id must be the previous one's plus one. A stream that
    ends or is silent past the keep-alive is an error; it is reopened with Last-Event-ID, and the
    replay must go on without a gap. `track` keeps the pictures it was told exist."""

    def __init__(self, port, errors, track):
        super().__init__(port, errors)
        self.track = track
        self.last_id = None
        self.events = 0
        self.existing = set()
        self.created = set()
        self.deleted_by_retention = 0
        self.ready = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            headers = {"Last-Event-ID": str(self.last_id)} if self.last_id is not None else {}
            try:
                # Twice the keep-alive (15 s): a stream silent for that long has stalled.
                stream = EventStream(self.port, headers=headers, timeout=30)
                status, _ = stream.head()
                if status != 200:
                    self.errors.add("events", f"answered {status}")
                    self.stopping.wait(1)
                    continue
                self.ready.set()
                while not self.stopping.is_set():
                    self._apply(stream.next_event())
            except (OSError, EOFError, ValueError) as error:
                if not self.stopping.is_set():
                    self.errors.add("events", f"stream lost after id {self.last_id}: {error!r}")
                    self.stopping.wait(0.5)

    def _apply(self, event):
        if self.last_id is not None and event["id"] != self.last_id + 1:
            self.errors.add("events", f"id {event['id']} after {self.last_id}")
        self.last_id = event["id"]
        self.events += 1
        kind = event["event"]
        if kind == "reset":
            self.errors.add("events", f"reset: {event['data']}")
        if not self.track:
            return
        if kind == "picture.created":
            picture = event["data"]["id"]
            if picture in self.created:
                self.errors.add("events", f"picture {picture} created twice")
            self.created.add(picture)
            self.existing.add(picture)
        elif kind == "picture.deleted":
            self.existing.discard(event["data"]["id"])
            if event["data"].get("reason") == "retention":
                self.deleted_by_retention += 1


class Poller(Activity):
    """A polling script: `GET /library?after=CURSOR&wait=10&limit=500`, following `next`; every
    picture must come once, in increasing id order. Like a gallery page, it fetches each new
    picture's thumbnail (`?width=160`), so thumbnails are made, cached, and left for retention
    to delete with their pictures."""

    def __init__(self, port, errors):
        super().__init__(port, errors)
        self.cursor = 0
        self.seen = set()
        self.polls = 0
        self.thumbnails = 0
        self.thumbnails_gone = 0  # 404: retention took the picture first

    def fetch_thumbnail(self, picture):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=40)
        try:
            conn.request("GET", f"/media/{picture}.jpg?width=160", headers={"Host": "localhost"})
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        if response.status == 200 and data.startswith(b"\xff\xd8"):
            self.thumbnails += 1
        elif response.status == 404:
            self.thumbnails_gone += 1
        else:
            self.errors.add("thumbnail", f"/media/{picture}.jpg?width=160 answered {response.status} {data[:60]!r}")

    def poll_once(self, wait, thumbnails=False):
        path = f"/library?after={self.cursor}&limit=500" + (f"&wait={wait}" if wait else "")
        while path:
            status, page = call(self.port, "GET", path)
            self.polls += 1
            if status != 200:
                self.errors.add("poll", f"{path} answered {status}")
                return
            for item in page["items"]:
                if item["id"] in self.seen:
                    self.errors.add("poll", f"picture {item['id']} given twice")
                if item["id"] <= self.cursor:
                    self.errors.add("poll", f"picture {item['id']} after cursor {self.cursor}")
                self.seen.add(item["id"])
                self.cursor = max(self.cursor, item["id"])
                if thumbnails:
                    self.fetch_thumbnail(item["id"])
            path = page["next"]

    def run(self):
        while not self.stopping.is_set():
            try:
                self.poll_once(wait=10, thumbnails=True)
            except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
                self.errors.add("poll", repr(error))
                self.stopping.wait(1)


class Flapper(Activity):
    """The MQTT broker stopped for `every` seconds, then started for `every` seconds, over again."""

    def __init__(self, broker, errors, every):
        super().__init__(None, errors)
        self.broker = broker
        self.every = every
        self.flaps = 0

    def run(self):
        while not self.stopping.wait(self.every):
            self.broker.stop()
            self.flaps += 1
            if self.stopping.wait(self.every):
                break
            self._start()

    def _start(self):
        try:
            self.broker.start()
        except AssertionError as error:
            self.errors.add("broker", f"mosquitto did not start again: {error}")

    def finish(self):
        self.stop()
        self.join(30)
        if self.broker.process.poll() is not None:
            self._start()


# MARK: Samples


def proc_status(pid):
    with open(f"/proc/{pid}/status") as status:
        text = status.read()
    rss = int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) * 1024
    threads = int(re.search(r"Threads:\s+(\d+)", text).group(1))
    return rss, threads


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def file_size(path):
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def tree_size(path):
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            total += file_size(os.path.join(directory, name))
    return total


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def sample(daemon, started, errors, viewers, last_cpu):
    pid = daemon.process.pid
    rss, threads = proc_status(pid)
    catalog = os.path.join(daemon.data_dir, "catalog.sqlite")
    status, body = call(daemon.port, "GET", "/status", timeout=10)
    if status != 200:
        errors.add("status", f"GET /status answered {status}")
        body = {}
    pictures = body.get("library", {}).get("pictures")
    sinks = body.get("outbox", {}).get("sinks", [])
    cpu = cpu_seconds(pid)
    return {
        "seconds": round(time.monotonic() - started),
        "rss": rss,
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": threads,
        "sqlite": file_size(catalog) + file_size(catalog + "-wal"),
        "data_dir": tree_size(daemon.data_dir),
        "pictures": pictures,
        "sink_lag": max((sink["lag"] for sink in sinks), default=None),
        "cpu_s": round(cpu - last_cpu, 2),
        "cpu_total_s": round(cpu, 2),
        "preview_frames": viewers.frames_so_far(),
        "load1": loadavg(),
        "errors": errors.count(),
    }


def flatness(samples, settle_s):
    """Which measures grew past their slack after the settling time: {measure: (at settle, max)}."""
    later = [s for s in samples if s["seconds"] >= settle_s]
    if len(later) < 2:
        return None, {}
    base = later[0]
    grown = {}

    def check(measure, allowed):
        peak = max(s[measure] for s in later)
        if peak > base[measure] + allowed:
            grown[measure] = (base[measure], peak)

    check("rss", max(RSS_SLACK[0] * base["rss"], RSS_SLACK[1]))
    check("fds", FD_SLACK)
    check("threads", THREAD_SLACK)
    check("sqlite", max(FILE_SLACK[0] * base["sqlite"], FILE_SLACK[1]))
    check("data_dir", max(FILE_SLACK[0] * base["data_dir"], FILE_SLACK[1]))
    return base, grown


def trends(samples, settle_s):
    """Each measure's least-squares slope per hour over the samples after the settling time: a slow
    leak that stays within the slack of a short run still shows here."""
    later = [s for s in samples if s["seconds"] >= settle_s]
    if len(later) < 3:
        return {}
    hours = [s["seconds"] / 3600 for s in later]
    mean_hour = sum(hours) / len(hours)
    spread = sum((h - mean_hour) ** 2 for h in hours)
    slopes = {}
    for measure in ("rss", "fds", "threads", "sqlite", "data_dir"):
        values = [s[measure] for s in later]
        mean_value = sum(values) / len(values)
        slopes[measure] = sum((h - mean_hour) * (v - mean_value) for h, v in zip(hours, values)) / spread
    return slopes


def table(samples, sample_every_s):
    unit = "min" if sample_every_s >= 60 else "s"
    lines = [f"| {unit} | RSS MiB | fds | threads | SQLite MiB (db+wal) | data dir MiB | pictures | CPU % "
             "| preview fps/viewer | load | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    previous = None
    for s in samples:
        at = s["seconds"] / 60 if unit == "min" else s["seconds"]
        span = s["seconds"] - previous["seconds"] if previous else None
        cpu = f"{100 * s['cpu_s'] / span:.0f}" if span else "-"
        fps = f"{(s['preview_frames'] - previous['preview_frames']) / span / FULL['viewers']:.1f}" if span else "-"
        lines.append(f"| {at:.0f} | {s['rss'] / MIB:.1f} | {s['fds']} | {s['threads']} | {s['sqlite'] / MIB:.2f} | "
                     f"{s['data_dir'] / MIB:.1f} | {s['pictures']} | {cpu} | {fps} | {s['load1']} | {s['errors']} |")
        previous = s
    return "\n".join(lines)


# MARK: The end


def library_ids(port):
    ids = set()
    path = "/library?limit=500"
    while path:
        status, page = call(port, "GET", path)
        if status != 200:
            raise OSError(f"{path} answered {status}")
        ids.update(item["id"] for item in page["items"])
        path = page["next"]
    return ids


def sink_caught_up(port, timeout):
    """Waits until the MQTT sink is connected with no lag; returns the last /status outbox seen."""
    deadline = time.monotonic() + timeout
    while True:
        _, body = call(port, "GET", "/status", timeout=10)
        sinks = (body or {}).get("outbox", {}).get("sinks", [])
        if sinks and all(sink["connected"] and sink["lag"] == 0 for sink in sinks):
            return True, body["outbox"]
        if time.monotonic() > deadline:
            return False, (body or {}).get("outbox")
        time.sleep(0.5)


def undecodable(media_dir, ids):
    bad = []
    for picture in sorted(ids):
        path = os.path.join(media_dir, f"{picture}.jpg")
        result = subprocess.run(["djpeg", "-outfile", os.devnull, path], capture_output=True)
        if result.returncode != 0 or result.stderr:
            bad.append((picture, result.stderr.decode("utf-8", "replace")[:200]))
    return bad


# MARK: The run


class EarlyStop:
    """The first SIGINT or SIGTERM ends the sampling early (the end-of-run checks still run); the
    handlers are put back as soon as the sampling ends, so a second one aborts the run at once.

    The handler only sets a flag, which the main thread polls while it waits: a handler that
    took a lock (`threading.Event.set`) could interrupt the main thread holding that lock."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    POLL_S = 0.2

    def __init__(self):
        self.requested = False
        self.previous = {number: signal.signal(number, self.handle) for number in self.SIGNALS}

    def handle(self, number, frame):
        self.requested = True

    def wait(self, seconds):
        """Sleeps `seconds`, or less if a stop is asked for; returns whether one was."""
        deadline = time.monotonic() + seconds
        while not self.requested:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, self.POLL_S))
        return self.requested

    def restore(self):
        for number, handler in self.previous.items():
            signal.signal(number, handler)
        self.previous = {}


def run(shutterd, minutes, short=False, json_path=None, keep=False, log=print, outbox_max_events=None):
    settings = dict(SHORT if short else FULL)
    if outbox_max_events is not None:
        settings["outbox_max_events"] = outbox_max_events
    settle_s = min(settings["settle_s"], minutes * 60 / 3)
    duration_s = minutes * 60
    workspace = tempfile.mkdtemp(prefix="shutter-soak-", dir=DATA_ROOT)
    errors = Errors()
    # The daemon and the broker in sessions of their own: a Ctrl-C at the terminal reaches only
    # this script, which then ends the run with its checks (EarlyStop) while both still run.
    broker = Broker(os.path.join(workspace, "broker"), own_session=True).start()
    args = ["--camera", "test-pattern", "--size", "640x480", "--fps", "30", "--access-log", "false",
            "--retention-max-pictures", str(settings["retention_max_pictures"]), "--retention-min-age-s", "0",
            "--outbox-max-events", str(settings["outbox_max_events"]),
            "--mqtt-url", broker.url(), "--name", "soak", "--outbox-timeout-ms", "5000"]
    daemon = Daemon(os.path.join(workspace, "data"), args, binary=shutterd, preexec_fn=os.setsid).start()
    log(f"shutterd {daemon.process.pid} on port {daemon.port}, data in {workspace}; load {loadavg()}")

    try:
        followers = [EventFollower(daemon.port, errors, track=index == 0) for index in range(settings["event_streams"])]
        for follower in followers:
            follower.start()
        for follower in followers:
            follower.ready.wait(10)
        viewers = PreviewViewers(daemon.port, errors, settings["viewers"])
        poller = Poller(daemon.port, errors)
        snapper = Snapper(daemon.port, errors)
        jobs = JobKeeper(daemon.port, errors, settings["job_shots"])
        flapper = Flapper(broker, errors, settings["flap_every_s"])
        for activity in (viewers, poller, snapper, jobs, flapper):
            activity.start()

        started = errors.started
        samples = []
        log_seen = 0
        last_cpu = cpu_seconds(daemon.process.pid)
        samples.append(sample(daemon, started, errors, viewers, last_cpu))
        next_at = started
        stop_early = EarlyStop()
        try:
            while True:
                next_at += settings["sample_every_s"]
                if next_at > started + duration_s + 0.5:
                    break
                if stop_early.wait(max(0.0, next_at - time.monotonic())):
                    log(f"stopped early after {time.monotonic() - started:.0f} s; the end-of-run checks follow "
                        f"(interrupt again to abort)")
                    break
                if daemon.process.poll() is not None:
                    errors.add("daemon", f"exited with {daemon.process.returncode}")
                    break
                for line in daemon.log_lines[log_seen:]:
                    if ERROR_LINE.match(line):
                        errors.add("log", line)
                log_seen = len(daemon.log_lines)
                current = sample(daemon, started, errors, viewers, last_cpu)
                last_cpu = current["cpu_total_s"]
                samples.append(current)
                log(f"{current['seconds']:>6} s  rss {current['rss'] / MIB:.1f} MiB  fds {current['fds']}  "
                    f"threads {current['threads']}  sqlite {current['sqlite'] / MIB:.2f} MiB  "
                    f"data {current['data_dir'] / MIB:.1f} MiB  pictures {current['pictures']}  "
                    f"load {current['load1']}  errors {current['errors']}")
        finally:
            stop_early.restore()
        stopped_early = stop_early.requested
        ran_s = round(time.monotonic() - started)

        # The end: stop the load, let the sink catch up, then compare what every client believes.
        alive = daemon.process.poll() is None
        jobs.finish()
        snapper.stop()
        flapper.finish()
        snapper.join(20)
        summary = {"minutes": minutes, "short": short, "settle_s": settle_s, "settings": settings,
                   "ran_s": ran_s, "stopped_early": stopped_early}
        if alive:
            caught_up, outbox = sink_caught_up(daemon.port, timeout=60)
            summary["outbox"] = outbox
            if not caught_up:
                errors.add("sink", f"the MQTT sink had not caught up 60 s after the broker came back: {outbox}")
            for sink in (outbox or {}).get("sinks", []):
                if sink["dropped"]:
                    errors.add("sink", f"the {sink['name']} sink dropped {sink['dropped']} events")
            # Retention may take one more pass after the last picture; then nothing changes.
            time.sleep(3)
            library = library_ids(daemon.port)
            poller.stop()
            poller.join(20)
            poller.poll_once(wait=0)
            newest = max(library, default=0)
            _, status = call(daemon.port, "GET", "/status")
            latest_event = status["outbox"]["latest_event_id"]
            deadline = time.monotonic() + 20
            while any(follower.last_id != latest_event for follower in followers):
                if time.monotonic() > deadline:
                    positions = [follower.last_id for follower in followers]
                    errors.add("end", f"event streams at {positions}, the newest event {latest_event}")
                    break
                time.sleep(0.2)
            tracker = followers[0]
            if tracker.existing != library:
                errors.add("end", f"the event stream's pictures differ from the library: "
                                  f"{sorted(tracker.existing ^ library)[:20]}")
            polled_existing = poller.seen - (tracker.created - tracker.existing)
            if polled_existing != library:
                errors.add("end", f"the polling script's pictures differ from the library: "
                                  f"{sorted(polled_existing ^ library)[:20]}")
            if poller.seen != tracker.created:
                errors.add("end", f"polled and created differ: {sorted(poller.seen ^ tracker.created)[:20]}")
            bad = undecodable(os.path.join(daemon.data_dir, "media"), library)
            for picture, why in bad:
                errors.add("end", f"picture {picture} does not decode: {why}")
            summary.update(pictures_created=len(tracker.created), deleted_by_retention=tracker.deleted_by_retention,
                           pictures_at_end=len(library), newest_id=newest, events=tracker.events,
                           last_event_id=tracker.last_id, polls=poller.polls,
                           thumbnails=poller.thumbnails, thumbnails_gone=poller.thumbnails_gone,
                           decoded=len(library) - len(bad))
        for activity in (viewers, poller, *followers):
            activity.stop()
        exit_status = daemon.stop()
        for line in daemon.log_lines[log_seen:]:
            if ERROR_LINE.match(line):
                errors.add("log", line)
        warnings = {}
        for line in daemon.log_lines:
            match = WARNING_LINE.match(line)
            if match:
                warnings[match.group(1)] = warnings.get(match.group(1), 0) + 1
        summary["log_warnings"] = warnings
        if alive and exit_status != 0:
            errors.add("daemon", f"SIGTERM: exit status {exit_status}")
        if alive:
            state = catalog_state(daemon.data_dir)
            if set(state["rows"]) != state["files"]:
                errors.add("end", f"rows and files differ: {sorted(set(state['rows']) ^ state['files'])[:20]}")
            summary["thumbnail_files"] = len(state["thumbnails"])
            if not state["thumbnails"] <= set(state["rows"]):
                orphans = sorted(state["thumbnails"] - set(state["rows"]))
                errors.add("end", f"thumbnails of deleted pictures: {orphans[:20]}")
            if state["leftovers"]:
                errors.add("end", f"files left over: {state['leftovers'][:20]}")
        broker.stop()
        for activity in (viewers, *followers):
            activity.join(10)
    except BaseException:
        # Interrupted (Ctrl-C on a day-long run) or broken: leave no daemon or broker behind.
        daemon.process.kill()
        broker.stop()
        shutil.rmtree(workspace, ignore_errors=True)
        raise

    latencies = sorted(snapper.latencies)
    base, grown = flatness(samples, settle_s)
    summary.update(
        snaps=snapper.created, snap_p50_ms=round(1000 * latencies[len(latencies) // 2], 1) if latencies else None,
        snap_p99_ms=round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 1) if latencies else None,
        jobs=jobs.jobs, job_shots_taken=jobs.taken, job_shots_missed=jobs.missed, broker_flaps=flapper.flaps,
        preview_frames=viewers.frames, event_streams=len(followers), errors=errors.count(),
        errors_by_kind=errors.by_kind(), first_errors=errors.items[:20], grown=grown,
        flat=base is not None and not grown, settled_sample=base, trends=trends(samples, settle_s))
    if json_path:
        with open(json_path, "w") as out:
            json.dump({"samples": samples, "summary": summary, "errors": errors.items}, out, indent=1)
    if keep:
        log(f"kept {workspace}")
    else:
        shutil.rmtree(workspace, ignore_errors=True)
    return samples, summary


def passed(summary):
    """Flat, zero errors, and run for the whole time asked."""
    return summary["flat"] and not summary["errors"] and not summary.get("stopped_early")


def verdict(summary):
    lines = []
    if summary.get("stopped_early"):
        lines.append(f"**stopped early** after {summary['ran_s'] / 60:.1f} of {summary['minutes']:g} minutes "
                     f"(interrupted), so not a pass whatever follows")
    settle = summary["settle_s"]
    settle_text = f"{settle / 60:g} min" if settle >= 60 else f"{settle:g} s"
    if summary["settled_sample"] is None:
        lines.append("**flat: not judged** (the run is too short to have samples after the settling time)")
    elif summary["flat"]:
        lines.append(f"**flat after {settle_text}**: RSS within max(10 %, 8 MiB), fds within +{FD_SLACK}, threads "
                     f"within +{THREAD_SLACK}, SQLite and data directory within max(25 %, 8 MiB) of the sample at "
                     f"{settle_text}")
    else:
        grown = ", ".join(f"{name} {before} -> {peak}" for name, (before, peak) in summary["grown"].items())
        lines.append(f"**NOT flat after {settle_text}**: {grown}")
    slopes = summary.get("trends") or {}
    if slopes:
        lines.append(f"trend after {settle_text} (least squares): RSS {slopes['rss'] / MIB:+.2f} MiB/h, "
                     f"fds {slopes['fds']:+.1f}/h, threads {slopes['threads']:+.1f}/h, "
                     f"SQLite {slopes['sqlite'] / MIB:+.2f} MiB/h, data dir {slopes['data_dir'] / MIB:+.2f} MiB/h")
    if summary["errors"]:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in summary["errors_by_kind"].items())
        lines.append(f"**{summary['errors']} errors** ({kinds}); the first:")
        lines.extend(f"- {at} s {kind}: {detail}" for at, kind, detail in summary["first_errors"])
    else:
        lines.append("**zero errors**")
    lines.append(
        f"{summary.get('snaps')} snaps (p50 {summary.get('snap_p50_ms')} ms, p99 {summary.get('snap_p99_ms')} ms); "
        f"{summary.get('jobs')} interval jobs, {summary.get('job_shots_taken')} shots taken, "
        f"{summary.get('job_shots_missed')} missed; {summary.get('pictures_created')} pictures created, "
        f"{summary.get('deleted_by_retention')} deleted by retention, {summary.get('pictures_at_end')} at the end "
        f"(all decoded by djpeg: {summary.get('decoded')}); {summary.get('events')} events on each of "
        f"{summary.get('event_streams')} streams, no gap; {summary.get('polls')} polls, "
        f"{summary.get('thumbnails')} thumbnails fetched "
        f"({summary.get('thumbnails_gone')} pictures gone first, {summary.get('thumbnail_files')} cached at the end); "
        f"{summary.get('preview_frames')} preview frames to the viewers; the broker stopped "
        f"{summary.get('broker_flaps')} times")
    warnings = ", ".join(f"{message!r} x{count}" for message, count in summary.get("log_warnings", {}).items())
    lines.append(f"daemon log warnings (not errors): {warnings or 'none'}")
    return "\n\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=None, help="how long to run (default 30; --short: 1)")
    parser.add_argument("--shutterd", default=str(ROOT / ".build/release/shutterd"))
    parser.add_argument("--json", help="write the raw samples and the summary to this file")
    parser.add_argument("--short", action="store_true",
                        help="sample every 10 s, settle after 20 s, smaller retention, jobs and flaps (the e2e test)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--outbox-max-events", type=int, default=None,
                        help="the event history's bound (default 1500; the daemon's own default is 100000)")
    parser.add_argument("--report", metavar="FILE",
                        help="print the table and verdict of a run saved with --json, and run nothing")
    options = parser.parse_args()
    if options.report:
        with open(options.report) as saved:
            run_data = json.load(saved)
        summary = run_data["summary"]
        summary["first_errors"] = run_data["errors"][:20]
        summary["trends"] = trends(run_data["samples"], summary["settle_s"])
        print(table(run_data["samples"], summary["settings"]["sample_every_s"]))
        print()
        print(verdict(summary))
        sys.exit(0 if passed(summary) else 1)
    minutes = options.minutes if options.minutes is not None else (1 if options.short else 30)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"soak: {minutes:g} min, started {started}, {os.cpu_count()} CPUs, load {loadavg()}", file=sys.stderr)
    samples, summary = run(options.shutterd, minutes, options.short, options.json, options.keep,
                           log=lambda text: print(text, file=sys.stderr, flush=True),
                           outbox_max_events=options.outbox_max_events)
    print(table(samples, (SHORT if options.short else FULL)["sample_every_s"]))
    print()
    print(verdict(summary))
    sys.exit(0 if passed(summary) else 1)


if __name__ == "__main__":
    main()
