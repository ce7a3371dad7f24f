#!/usr/bin/env python3
"""Seeds a shutterd data directory with many pictures, fast: rows and small real files.

    python3 benchmarks/seed_catalog.py --data-dir /var/tmp/million --count 1000000

Taking a million pictures through `POST /snap` would take hours (every picture is fsynced), so:

1. The real daemon (`--shutterd`, the release build by default) starts once on the empty data
   directory: its own migrations make the schema, it takes one real picture (test pattern,
   160x120, EXIF and all) and runs one real interval job, and it stops. Nothing here writes DDL,
   so the seed always has the schema of the build that made it.
2. Python's sqlite3 inserts the other rows in one transaction, copying picture 1's size, bytes
   and sha256 (every file is the same picture), with the indexes dropped during the insert and
   made again afterwards from their own `CREATE INDEX` text in `sqlite_master`.
3. Every row gets a real file: `media/<id>.jpg` is a hard link to picture 1's file (to a fresh
   copy of it every 50,000 links: ext4 allows 65,000 links to an inode). A link is a directory
   entry, not a copy (no inode, no data), so a million take under a minute and a few tens of MB
   of directory blocks; each still serves the picture's real bytes, and the daemon's start-up
   reconciliation (rows without a file are removed) keeps every row.

Pictures 1 and 2 are the bootstrap's real ones (2 is the job's); the seeded rows are ids
3..count, one a second in the past ending an hour ago (old enough for any
retention test); every `--job-every`th picture belongs to one of `--jobs` finished jobs (clones
of the real job's row); every `--label-every`th has one of `--labels` labels (`label-0`...);
every `--keep-every`th is kept. The seed refuses a catalog whose schema version it was not
written for (SCHEMA_VERSION) rather than guess at new columns.

Prints one JSON object: what was made and how long each step took.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The catalog's `PRAGMA user_version` this tool knows the columns of (CatalogSchema.migrations).
SCHEMA_VERSION = 7  # 6 adds indexes only, 7 two columns with defaults (S3 offload)
# Below ext4's limit of 65,000 links to one inode, which other file systems do not go under.
LINKS_PER_COPY = 50_000


def start_daemon(binary, data_dir, args=()):
    """Starts shutterd on a free loopback port; returns the process and its port."""
    process = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--access-log", "false", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines = []
    for raw in process.stderr:
        lines.append(raw.decode("utf-8", "replace"))
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, int(match.group(1))
    raise SystemExit("shutterd did not start:\n" + "".join(lines))


def request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def bootstrap(binary, data_dir):
    """The real daemon makes the schema, one picture and one finished job; returns the picture."""
    process, port = start_daemon(binary, data_dir, ["--size", "160x120", "--fps", "30"])
    try:
        status, body = request(port, "POST", "/snap")
        if status != 201:
            raise SystemExit(f"POST /snap answered {status}: {body!r}")
        picture = json.loads(body)
        status, body = request(port, "POST", "/jobs", json.dumps({"kind": "interval", "every": 1, "count": 1}))
        if status != 201:
            raise SystemExit(f"POST /jobs answered {status}: {body!r}")
        job = json.loads(body)
        deadline = time.monotonic() + 20
        while True:
            status, body = request(port, "GET", f"/jobs/{job['id']}")
            if json.loads(body)["state"] not in ("scheduled", "running"):
                break
            if time.monotonic() > deadline:
                raise SystemExit("the bootstrap job did not finish")
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    return picture


def seed(data_dir, count, binary, jobs=20, job_every=7, labels=50, label_every=3, keep_every=1000):
    """Makes `data_dir` hold `count` pictures; returns a summary with timings in seconds."""
    if count < 3:
        raise SystemExit("--count must be at least 3")
    if os.path.exists(os.path.join(data_dir, "catalog.sqlite")):
        raise SystemExit(f"{data_dir} already has a catalog; seed into an empty directory")
    timings = {}
    started = time.monotonic()
    picture = bootstrap(binary, data_dir)
    timings["bootstrap_s"] = time.monotonic() - started

    database_path = os.path.join(data_dir, "catalog.sqlite")
    media = os.path.join(data_dir, "media")
    # The job took picture 2; both real pictures stay, the seeded rows start at 3.
    source = os.path.join(media, f"{picture['id']}.jpg")
    connection = sqlite3.connect(database_path, isolation_level=None)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise SystemExit(
                f"the catalog has schema version {version}; this tool writes version {SCHEMA_VERSION}'s columns: "
                "update seed_catalog.py for the new migrations")
        job_row = connection.execute(
            "SELECT spec, label, state, created_at, started_at, taken, missed, last_failure, finished_at, "
            "last_failure_kind FROM jobs ORDER BY id LIMIT 1").fetchone()
        if picture["id"] != 1 or job_row is None:
            raise SystemExit("the bootstrap did not leave picture 1 and one job")

        started = time.monotonic()
        # Nobody else has the file open: the daemon stopped. WAL stays the journal mode the
        # daemon chose; synchronous OFF only for this bulk insert (a crash here means re-seeding).
        connection.execute("PRAGMA synchronous = OFF")
        connection.execute("BEGIN IMMEDIATE")
        if connection.execute("SELECT count(*), max(id) FROM media").fetchone() != (2, 2):
            raise SystemExit("the bootstrap did not leave exactly pictures 1 and 2")
        indexes = connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'media' AND sql IS NOT NULL"
        ).fetchall()
        for name, _ in indexes:
            connection.execute(f'DROP INDEX "{name}"')
        connection.executemany(
            "INSERT INTO jobs (id, spec, label, state, created_at, started_at, taken, missed, last_failure, "
            "finished_at, last_failure_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((job_id, *job_row) for job_id in range(2, jobs + 2)))
        now_ms = int(time.time() * 1000)
        newest_ms = now_ms - 3_600_000

        def rows():
            for id in range(3, count + 1):
                job_id = 2 + (id // job_every) % jobs if id % job_every == 0 else None
                label = f"label-{(id // label_every) % labels}" if id % label_every == 0 else None
                yield (id, newest_ms - (count - id) * 1000, picture["width"], picture["height"], picture["bytes"],
                       picture["sha256"], picture["source"], job_id, 1 if id % keep_every == 0 else 0, label)

        connection.executemany(
            "INSERT INTO media (id, taken_at, width, height, bytes, sha256, source, job_id, keep, label) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows())
        timings["insert_s"] = time.monotonic() - started
        started = time.monotonic()
        for _, sql in indexes:
            connection.execute(sql)
        # The table's AUTOINCREMENT counter follows the largest id, as inserts through the daemon leave it.
        connection.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'media'", (count,))
        connection.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'jobs'", (jobs + 1,))
        connection.execute("COMMIT")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        timings["index_s"] = time.monotonic() - started
    finally:
        connection.close()

    started = time.monotonic()
    # ext4 allows 65,000 links to one inode (EMLINK): every LINKS_PER_COPY pictures start from a
    # fresh copy of the file, so a million pictures are a few dozen inodes.
    target, links_left = source, LINKS_PER_COPY
    for id in range(3, count + 1):
        path = os.path.join(media, f"{id}.jpg")
        if links_left == 0:
            shutil.copyfile(source, path)
            target, links_left = path, LINKS_PER_COPY
        else:
            os.link(target, path)
            links_left -= 1
    # The daemon fsyncs the directory after each of its own writes; one sync here does the same.
    descriptor = os.open(media, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    timings["links_s"] = time.monotonic() - started
    return {
        "data_dir": data_dir, "pictures": count, "jobs": jobs + 1, "labels": labels,
        "picture": {key: picture[key] for key in ("width", "height", "bytes", "sha256")},
        "database_bytes": os.path.getsize(database_path),
        "timings": {key: round(value, 2) for key, value in timings.items()},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="an empty or missing directory")
    parser.add_argument("--count", type=int, default=1_000_000, help="pictures in all (at least 3)")
    parser.add_argument("--shutterd", default=os.path.join(ROOT, ".build/release/shutterd"),
                        help="the daemon that makes the schema (default: the release build)")
    parser.add_argument("--jobs", type=int, default=20, help="finished jobs the job pictures belong to")
    parser.add_argument("--job-every", type=int, default=7, help="every Nth picture belongs to a job")
    parser.add_argument("--labels", type=int, default=50, help="distinct labels")
    parser.add_argument("--label-every", type=int, default=3, help="every Nth picture has a label")
    parser.add_argument("--keep-every", type=int, default=1000, help="every Nth picture is kept")
    args = parser.parse_args()
    summary = seed(args.data_dir, args.count, args.shutterd, jobs=args.jobs, job_every=args.job_every,
                   labels=args.labels, label_every=args.label_every, keep_every=args.keep_every)
    json.dump(summary, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
