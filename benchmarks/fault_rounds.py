#!/usr/bin/env python3
"""kill -9 at random moments, round after round (issue 15), and what must hold after each restart.

Each round starts the daemon on one data directory (kept across the rounds, so every restart
meets everything the earlier ones left), runs one activity picked at random, and kills the daemon
with SIGKILL at a random moment of it:

    snaps      POST /snap in a loop
    burst      a burst job of 300 shots (the camera's frame rate into the catalog)
    interval   an interval job, a shot every 0.1 s
    deletes    snaps and DELETEs of random pictures, interleaved
    retention  snaps into a daemon keeping at most 12 pictures (retention_min_age_s 0)
    outbox     snaps and PATCHes while the webhook receiver is slow and refuses every third POST
    camera     snaps and an interval job on the emulated V4L2 camera, which unplugs for 0.4 s
               after every 20 frames (Tests/EmulatedCamera): shots and snaps fail meanwhile

Thumbnails are asked for (and cached) all along. A webhook receiver on a loopback port gets every
event, in every round. After the kill the daemon is started again and, once its start-up check of
the media directory is done:

1. the catalog's rows, the files in media/ and the thumbnails agree: a file for every row and a
   row for every file, thumbnails only of pictures that exist, no temporary file left;
2. every picture is whole: its SHA-256 is the row's, and djpeg decodes it (each once);
3. the outbox agrees with the catalog: the pictures are exactly those with a picture.created event
   and no picture.deleted event, each created and deleted at most once;
4. every picture a client was told of (a 201 from /snap, a picture.created the receiver took) is
   there, or has its picture.deleted event; every 204 from a DELETE has its event and no row;
5. the receiver gets every event from the first it took to the newest, at least once (duplicates
   are redeliveries after a kill, counted), and within one daemon's life in increasing id order.

Usage: benchmarks/fault_rounds.py [--rounds 50] [--seed N] [--shutterd PATH] [--keep]
Needs: swift build -c release --product shutterd; djpeg (libjpeg-turbo-progs); pytest (the
end-to-end tests' daemon helper imports it). Tests/e2e/test_faults.py runs a few rounds.
"""

import argparse
import collections
import hashlib
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "Tests" / "e2e"))

from conftest import Daemon  # noqa: E402
from emucam import emucam_env  # noqa: E402
from faults import catalog_state  # noqa: E402
from webhook_receiver import WebhookReceiver  # noqa: E402

ACTIVITIES = ("snaps", "burst", "interval", "deletes", "retention", "outbox", "camera")
BASE_ARGS = ["--size", "320x240", "--fps", "30", "--min-free-bytes", "0", "--access-log", "false",
             "--max-job-shots", "100000", "--outbox-timeout-ms", "2000"]


class Receiver(WebhookReceiver):
    """The rounds' webhook receiver: each POST tagged with the daemon's generation (the number of
    the daemon's life) when it arrived, optionally slow and refusing every `refuse_every`th."""

    def __init__(self):
        self.generation = 0
        self.delay_s = 0.0
        self.refuse_every = 0
        super().__init__(tag=self.current_generation)

    def current_generation(self):
        with self.lock:
            return self.generation

    def respond(self, post):
        with self.lock:
            delay, refuse_every = self.delay_s, self.refuse_every
        if delay:
            time.sleep(delay)
        return 503 if refuse_every and post.number % refuse_every == 0 else 204

    def snapshot(self):
        """(generation, event id, event) of every accepted POST."""
        return [(post.tag, event["id"], event)
                for post in self.accepted_posts() for event in [json.loads(post.body)]]


def call(port, method, path, body=None, timeout=10):
    """(status, parsed body or None); raises OSError when the daemon is gone."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers={"Host": "localhost"})
        response = conn.getresponse()
        data = response.read()
        ctype = response.getheader("Content-Type", "")
        return response.status, (json.loads(data) if data and "json" in ctype else data)
    finally:
        conn.close()


class Client:
    """What clients were told, across rounds: pictures answered 201, DELETEs answered 204."""

    def __init__(self):
        self.lock = threading.Lock()
        self.created = {}  # id -> record from a 201
        self.deleted = set()  # ids answered 204
        self.known = []  # ids to delete or to ask thumbnails of

    def snap(self, port):
        status, record = call(port, "POST", "/snap")
        if status == 201:
            with self.lock:
                self.created[record["id"]] = record
                self.known.append(record["id"])
        return status

    def pick(self, rng):
        with self.lock:
            return rng.choice(self.known) if self.known else None


def run_activity(activity, port, client, rng, stop, errors):
    """The work a round kills the daemon in the middle of; returns its threads."""

    def guarded(work):
        def body():
            try:
                while not stop.is_set():
                    work()
            except (OSError, http.client.HTTPException):
                pass  # the daemon was killed under us: that is the point
            except Exception as error:  # noqa: BLE001 - reported, then the round fails
                errors.append(f"{activity}: {error!r}")
        return threading.Thread(target=body, daemon=True)

    def snaps():
        status = client.snap(port)
        if status not in (201, 503):
            errors.append(f"{activity}: snap answered {status}")

    def deletes():
        client.snap(port)
        for _ in range(2):
            victim = client.pick(rng)
            if victim is None:
                return
            status, _ = call(port, "DELETE", f"/library/{victim}")
            if status == 204:
                with client.lock:
                    client.deleted.add(victim)
            elif status != 404:
                errors.append(f"deletes: DELETE answered {status}")

    def patches():
        client.snap(port)
        victim = client.pick(rng)
        if victim is not None:
            status, _ = call(port, "PATCH", f"/library/{victim}", {"keep": rng.random() < 0.3})
            if status not in (200, 404):
                errors.append(f"outbox: PATCH answered {status}")

    def thumbnails():
        victim = client.pick(rng)
        if victim is not None:
            status, _ = call(port, "GET", f"/media/{victim}.jpg?width={rng.choice((48, 64, 96, 160))}")
            if status not in (200, 404):
                errors.append(f"thumbnails: answered {status}")
        time.sleep(0.02)

    def job(spec):
        status, body = call(port, "POST", "/jobs", spec)
        if status != 201:
            errors.append(f"{activity}: POST /jobs answered {status} {body}")
        stop.wait()

    work = {
        "snaps": snaps,
        "retention": snaps,
        "deletes": deletes,
        "outbox": patches,
        "burst": lambda: job({"kind": "burst", "count": 300}),
        "interval": lambda: job({"kind": "interval", "every": 0.1, "count": 1000}),
        "camera": lambda: job({"kind": "interval", "every": 0.1, "count": 1000}),
    }[activity]
    threads = [guarded(work), guarded(thumbnails)]
    if activity == "camera":
        threads.append(guarded(snaps))
    for thread in threads:
        thread.start()
    return threads


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Checker:
    """The checks after a restart, with what was verified once (decoded pictures) remembered."""

    def __init__(self, data_dir):
        self.data_dir = Path(data_dir)
        self.decoded = set()
        self.first_delivered = None
        self.figures = collections.Counter()

    def check(self, daemon, client, receiver):
        daemon.wait_for_log("media directory checked", timeout=30)
        # A job the kill interrupted resumes in this daemon (that resumption is part of the
        # test); it is cancelled so that nothing changes while the checks look.
        status, page = call(daemon.port, "GET", "/jobs?limit=500")
        assert status == 200, page
        for job in page["items"]:
            if job["state"] in ("scheduled", "running"):
                self.figures["jobs resumed, then cancelled"] += 1
                call(daemon.port, "DELETE", f"/jobs/{job['id']}")
                status, ended = call(daemon.port, "GET", f"/jobs/{job['id']}?wait=10&state_not=running")
                assert ended["state"] not in ("scheduled", "running"), ended
        time.sleep(0.1)  # a shot's insert that was in flight has committed
        # The receiver's view first: whatever it was told had committed before the look below.
        delivered_before = receiver.snapshot()
        state = catalog_state(self.data_dir)
        rows, files, thumbs = state["rows"], state["files"], state["thumbnails"]
        problems = []
        # 1. rows == files; thumbnails of existing pictures only; nothing unfinished.
        if set(rows) != files:
            problems.append(f"rows without files {sorted(set(rows) - files)}, files without rows "
                            f"{sorted(files - set(rows))}")
        if not thumbs <= set(rows):
            problems.append(f"thumbnails of pictures gone: {sorted(thumbs - set(rows))}")
        if state["leftovers"]:
            problems.append(f"leftovers after the start-up check: {state['leftovers']}")
        # 2. every picture whole; each decoded once.
        for picture_id, sha in rows.items():
            data = (self.data_dir / "media" / f"{picture_id}.jpg").read_bytes()
            if hashlib.sha256(data).hexdigest() != sha:
                problems.append(f"picture {picture_id} does not match its SHA-256")
            elif picture_id not in self.decoded:
                result = subprocess.run(["djpeg", "-pnm"], input=data, capture_output=True)
                if result.returncode != 0 or result.stderr:
                    problems.append(f"picture {picture_id} does not decode: {result.stderr[:200]!r}")
                self.decoded.add(picture_id)
                self.figures["pictures decoded"] += 1
        # 3. the outbox agrees with the catalog.
        created, deleted = collections.Counter(), collections.Counter()
        event_ids = []
        for event_id, kind, data in state["events"]:
            event_ids.append(event_id)
            if kind == "picture.created":
                created[json.loads(data)["id"]] += 1
            elif kind == "picture.deleted":
                deleted[json.loads(data)["id"]] += 1
        if event_ids != sorted(set(event_ids)):
            problems.append("event ids repeat or go backwards")
        twice = [i for i, n in (created + deleted).items() if created[i] > 1 or deleted[i] > 1]
        if twice:
            problems.append(f"pictures created or deleted twice: {twice[:10]}")
        if set(deleted) - set(created):
            problems.append(f"deleted without being created: {sorted(set(deleted) - set(created))[:10]}")
        alive = set(created) - set(deleted)
        if alive != set(rows):
            problems.append(f"events say {sorted(alive ^ set(rows))[:10]} differently from the rows")
        # 4. what clients were told.
        told = set(client.created) | {e["data"]["id"] for _, _, e in delivered_before
                                      if e["type"] == "picture.created"}
        lost = sorted(i for i in told if i not in rows and i not in deleted)
        if lost:
            problems.append(f"pictures reported created and now gone without an event: {lost[:10]}")
        undone = sorted(i for i in client.deleted if i in rows or i not in deleted)
        if undone:
            problems.append(f"DELETEs answered 204 that did not hold: {undone[:10]}")
        # 5. the receiver catches up with every event, at least once.
        newest = event_ids[-1] if event_ids else 0
        wait_until(lambda: any(i >= newest for _, i, _ in receiver.snapshot()), 30,
                   f"the webhook receiver to get event {newest}")
        accepted = receiver.snapshot()
        if self.first_delivered is None and accepted:
            self.first_delivered = min(i for _, i, _ in accepted)
        got = {i for _, i, _ in accepted}
        expected = {i for i in event_ids if i >= (self.first_delivered or 0)}
        if expected - got:
            problems.append(f"events never delivered: {sorted(expected - got)[:10]}")
        by_generation = collections.defaultdict(list)
        for generation, event_id, _ in accepted:
            by_generation[generation].append(event_id)
        for generation, ids in by_generation.items():
            if any(b <= a for a, b in zip(ids, ids[1:])):
                problems.append(f"deliveries out of order within one daemon's life ({generation})")
        self.figures["rows"] = len(rows)
        self.figures["thumbnails"] = sum(1 for _ in (self.data_dir / "media" / "thumbs").glob("*.jpg")) \
            if (self.data_dir / "media" / "thumbs").exists() else 0
        self.figures["events"] = len(event_ids)
        self.figures["deliveries"] = len(accepted)
        self.figures["redeliveries"] = len(accepted) - len(got)
        self.figures["reported created"] = len(told)
        self.figures["deletes answered 204"] = len(client.deleted)
        return problems


def run_rounds(binary, work_dir, rounds, seed, log=print, kill_window=(0.3, 2.0)):
    """Runs `rounds` rounds; returns the figures. Raises AssertionError on the first round whose
    checks fail, naming the round, its activity and what failed."""
    # The plan (activities, kill moments) from the seed alone, so a seed names the same rounds;
    # the workers' own choices (which picture to delete) depend on timing anyway.
    rng = random.Random(seed)
    worker_rng = random.Random(seed + 1)
    data_dir = Path(work_dir) / "data"
    receiver = Receiver()
    client = Client()
    checker = Checker(data_dir)
    counts = collections.Counter()
    kill_times = []
    daemon = None
    try:
        daemon = Daemon(data_dir, [*BASE_ARGS, "--webhook-url", receiver.url], binary=binary).start()
        daemon.wait_for_log("sink starts with the events from now on")
        for number in range(1, rounds + 1):
            activity = rng.choice(ACTIVITIES)
            counts[activity] += 1
            # The daemon that did the last check is stopped, and this round's started with the
            # activity's options.
            daemon.stop(signal.SIGKILL)
            args = [*BASE_ARGS, "--webhook-url", receiver.url]
            env = None
            if activity == "retention":
                args += ["--retention-max-pictures", "12", "--retention-min-age-s", "0"]
            if activity == "camera":
                # Later flags win: the emulated camera's size replaces the test pattern's.
                args += ["--camera", "/dev/video0", "--size", "640x480", "--warmup-ms", "100",
                         "--reopen-interval-ms", "200", "--snap-timeout-ms", "500"]
                env = emucam_env(unplug_after=20, unplug_seconds=0.4, unplug_times=0)
            with receiver.lock:
                receiver.generation += 1
                receiver.delay_s, receiver.refuse_every = (0.03, 3) if activity == "outbox" else (0.0, 0)
            daemon = Daemon(data_dir, args, env=env, binary=binary).start()
            stop, errors = threading.Event(), []
            threads = run_activity(activity, daemon.port, client, worker_rng, stop, errors)
            kill_after = rng.uniform(*kill_window)
            kill_times.append(kill_after)
            time.sleep(kill_after)
            daemon.stop(signal.SIGKILL)
            stop.set()
            for thread in threads:
                thread.join(15)
            # A POST the killed daemon sent has reached the receiver by now.
            time.sleep(0.2)
            with receiver.lock:
                receiver.generation += 1
                receiver.delay_s, receiver.refuse_every = 0.0, 0
            daemon = Daemon(data_dir, [*BASE_ARGS, "--webhook-url", receiver.url], binary=binary).start()
            problems = errors + checker.check(daemon, client, receiver)
            log(f"round {number:3}: {activity:9} killed after {kill_after:.2f} s; "
                f"{checker.figures['rows']} pictures, {checker.figures['thumbnails']} thumbnails, "
                f"{checker.figures['events']} events; {'ok' if not problems else 'FAILED'}")
            if problems:
                raise AssertionError(f"round {number} ({activity}, seed {seed}):\n  " + "\n  ".join(problems))
        daemon.stop(signal.SIGTERM)
    finally:
        # A failed round leaves its daemon running: never leave it behind.
        if daemon is not None and daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()
        receiver.close()
    figures = dict(checker.figures)
    figures["rounds"] = rounds
    figures["activities"] = dict(counts)
    figures["kill after (s), min/max"] = (round(min(kill_times), 2), round(max(kill_times), 2))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the time, printed)")
    parser.add_argument("--shutterd", default=str(ROOT / ".build" / "release" / "shutterd"))
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else int(time.time())
    work_dir = tempfile.mkdtemp(prefix="fault-rounds-", dir=os.environ.get("SHUTTER_BENCH_DATA", "/var/tmp"))
    print(f"fault rounds: {options.rounds} rounds, seed {seed}, data in {work_dir}")
    started = time.monotonic()
    try:
        figures = run_rounds(options.shutterd, work_dir, options.rounds, seed)
    finally:
        if not options.keep:
            shutil.rmtree(work_dir, ignore_errors=True)
    print(f"all {options.rounds} rounds passed in {time.monotonic() - started:.0f} s")
    for key, value in figures.items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
