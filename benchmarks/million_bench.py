#!/usr/bin/env python3
"""A million pictures (issue 13): the daemon on a catalog of 1,000,000 seeded pictures.

    python3 benchmarks/million_bench.py [--count 1000000] [--duration 5] [--shutterd BIN]

1. Seed (benchmarks/seed_catalog.py), or reuse the seed cached under --seed-root from an
   earlier run (the retention step spends it: it is marked stale first and made again next run).
2. Start-up, three times (with --compare-start-up BIN, first three alternated pairs of this
   build and BIN): the time from exec to the "listening" line, and the part of it the
   catalog spent opening SQLite (`sqlite_open_ms` in the daemon's "catalog opened" line: the
   sqlite3_open_v2 call, WAL mode and the schema read), so start-up beyond SQLite opening the
   file is the first minus the second.
3. `wrk -c16 --latency` on `GET /library?limit=50` and on every filter and cursor (`before`,
   `after`, both, `job`, `label`, and `since`, `until`, `keep`: a build that answers 400 for
   one of those is reported "not on this build").
4. `304` revalidation of `/library` with `If-None-Match` against nginx (1 worker) answering
   `If-None-Match` on a small static file, alternated ours, nginx, ours, nginx in the same run.
5. Retention removing 100,000 pictures: snaps one after another (at random phases of the frame
   clock) on the daemon without retention ("before"), then on the daemon restarted with
   `--retention-max-pictures` 100,000 below what it holds and `--retention-min-age-s 0`, whose
   first snap starts the removal: snap latency p50/p99 before, during and after it.
6. What the `picture.deleted` events cost: SQLite deleting the same 100,000 rows by id in one
   transaction, with and without inserting one event row each, on a copy of the seeded catalog.

Prints one JSON object. Needs wrk and nginx (Debian: wrk, nginx-light); run
`swift build -c release --product shutterd` first.
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import http_bench  # noqa: E402  (wrk, nginx_conf: the same drivers as the other benchmarks)
import seed_catalog  # noqa: E402

# Filters another branch adds; a build without them answers 400 "unknown parameter".
NEWER_FILTERS = ("since", "until", "keep")


class Daemon:
    """One shutterd process whose log lines are kept with the monotonic time they arrived."""

    def __init__(self, binary, data_dir, args=()):
        self.binary, self.data_dir, self.args = binary, data_dir, list(args)
        self.lines = []
        self.port = None

    def start(self, timeout=120):
        self.exec_at = time.monotonic()
        self.process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0", "--data-dir", self.data_dir, "--access-log", "false",
             *self.args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        listening = threading.Event()

        def read():
            for raw in self.process.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append((time.monotonic(), line))
                match = re.search(r"listening .*address=[^ ]*:(\d+)", line)
                if match and self.port is None:
                    self.listening_at = time.monotonic()
                    self.port = int(match.group(1))
                    listening.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not listening.wait(timeout):
            self.process.kill()
            raise SystemExit("shutterd did not start:\n" + "\n".join(line for _, line in self.lines))
        return self

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)
        self.reader.join(10)

    def wait_for(self, message, timeout=120):
        """Waits for a log line holding `message`; returns when it arrived (monotonic) or None.

        A build older than the "catalog opened" line checks its media before listening and logs
        neither line: nothing to wait for."""
        if not any("catalog opened" in line for _, line in self.lines):
            return None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if message in line:
                    return at
            time.sleep(0.05)
        return None

    def field(self, message, name):
        """The value of `name=` in the first log line with `message`, or None."""
        for _, line in self.lines:
            if message in line:
                match = re.search(rf"\b{name}=([^ ]+)", line)
                if match:
                    return match.group(1)
        return None

    def request(self, method, path, headers=None, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            conn.close()


def milliseconds(text):
    """wrk's latency text (`812.00us`, `1.20ms`, `2.01s`) in milliseconds."""
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return round(float(value) * {"us": 0.001, "ms": 1, "s": 1000, "m": 60000}[unit], 3)


def wrk(url, connections, duration, headers=(), script=None):
    command = ["wrk", "-t2", "-c", str(connections), "-d", f"{duration}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    if script:
        command += ["-s", script]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    latency = dict(re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+\w+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50_ms": milliseconds(latency["50"]), "p99_ms": milliseconds(latency["99"]),
            "non2xx3xx": int(errors.group(1)) if errors else 0}


def load_average():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def prepared_seed(args):
    """The seeded data directory, made now or reused from an earlier run."""
    seed_dir = os.path.join(args.seed_root, f"seed-{args.count}")
    marker = os.path.join(seed_dir, "seed.json")
    if os.path.exists(marker) and not args.reseed:
        with open(marker) as f:
            summary = json.load(f)
        summary["reused"] = True
        return seed_dir, summary
    shutil.rmtree(seed_dir, ignore_errors=True)
    os.makedirs(args.seed_root, exist_ok=True)
    started = time.monotonic()
    summary = seed_catalog.seed(os.path.join(seed_dir, "data"), args.count, args.shutterd)
    summary["seconds"] = round(time.monotonic() - started, 1)
    with open(marker, "w") as f:
        json.dump(summary, f)
    summary["reused"] = False
    return seed_dir, summary


def start_up(args, data_dir, runs=3, binary=None):
    results = []
    for _ in range(runs):
        daemon = Daemon(binary or args.shutterd, data_dir).start()
        try:
            to_listening = (daemon.listening_at - daemon.exec_at) * 1000
            status, _, body = daemon.request("GET", "/status")
            pictures = json.loads(body)["library"]["pictures"] if status == 200 else None
            # The comparison of rows and files runs after "listening", beside the serving daemon:
            # how long after exec it ended (a build that checks before listening logs no such line).
            checked_at = daemon.wait_for("media directory checked")
            sqlite_open = daemon.field("catalog opened", "sqlite_open_ms")
            results.append({
                "exec_to_listening_ms": round(to_listening, 1),
                "sqlite_open_ms": float(sqlite_open) if sqlite_open else None,
                "beyond_sqlite_open_ms": round(to_listening - float(sqlite_open), 1) if sqlite_open else None,
                "catalog_open_ms": float(daemon.field("catalog opened", "total_ms") or "nan"),
                "catalog_log": next((line for _, line in daemon.lines if "catalog opened" in line), None),
                "pictures": pictures,
                "media_check_done_after_exec_ms": round((checked_at - daemon.exec_at) * 1000) if checked_at else None,
                "repairs": [line for _, line in daemon.lines if "removed" in line],
            })
        finally:
            daemon.stop()
    # SQLite opening the file as any program sees it, for comparison (warm page cache, as above).
    started = time.monotonic()
    connection = sqlite3.connect(os.path.join(data_dir, "catalog.sqlite"))
    connection.execute("PRAGMA journal_mode=WAL").fetchone()
    connection.execute("PRAGMA user_version").fetchone()
    connection.close()
    return {"runs": results, "python_sqlite_open_ms": round((time.monotonic() - started) * 1000, 2),
            "median_beyond_sqlite_open_ms": statistics.median(
                r["beyond_sqlite_open_ms"] for r in results if r["beyond_sqlite_open_ms"] is not None)
            if any(r["beyond_sqlite_open_ms"] is not None for r in results) else None}


def iso8601(millis):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis / 1000)) + f".{millis % 1000:03d}Z"


def listings(daemon, count, duration):
    """wrk -c16 on the first page and on every filter and cursor; p99 per query."""
    middle = count // 2
    status, _, body = daemon.request("GET", f"/library/{middle}")
    middle_taken = json.loads(body)["taken_at"] if status == 200 else None
    status, _, body = daemon.request("GET", f"/library/{middle + 1000}")
    later_taken = json.loads(body)["taken_at"] if status == 200 else None
    queries = {
        "first page": "/library?limit=50",
        "before (middle)": f"/library?limit=50&before={middle}",
        "before (oldest end)": "/library?limit=50&before=200",
        "after (middle)": f"/library?limit=50&after={middle}",
        "after=0 (oldest first)": "/library?limit=50&after=0",
        "after and before": f"/library?limit=50&after={middle}&before={middle + 100}",
        "job": "/library?limit=50&job=5",
        "job, after (middle)": f"/library?limit=50&job=5&after={middle}",
        "label": "/library?limit=50&label=label-7",
        "label, before (middle)": f"/library?limit=50&label=label-7&before={middle}",
        "label nobody has": "/library?limit=50&label=nobody",
        "since": f"/library?limit=50&since={middle_taken}",
        "until": f"/library?limit=50&until={middle_taken}",
        "since and until": f"/library?limit=50&since={middle_taken}&until={later_taken}",
        "keep=true": "/library?limit=50&keep=true",
        "keep=false, before (middle)": f"/library?limit=50&keep=false&before={middle}",
    }
    results = {}
    for name, path in queries.items():
        status, _, body = daemon.request("GET", path)
        if status == 400 and any(f"{p}=" in path for p in NEWER_FILTERS):
            results[name] = {"path": path, "result": "not on this build", "detail": body.decode()[:200]}
            continue
        if status != 200:
            raise SystemExit(f"{path} answered {status}: {body[:300]!r}")
        items = len(json.loads(body)["items"])
        url = f"http://127.0.0.1:{daemon.port}{path}"
        wrk(url, 16, 1)  # warm up
        result = wrk(url, 16, duration)
        result.update(path=path, items=items)
        results[name] = result
    results.update(uncached_listings(daemon, count, duration))
    return results


# The same query repeated is answered from the daemon's rendered-page cache after its first
# answer (as a poller's is). These ask a different page every time, so every answer is read from
# SQLite and written as JSON: the cost of a listing nobody asked for before.
UNCACHED = {
    "uncached: random before": ("/library?limit=50&before=%d", 100, None),
    "uncached: label, random before": ("/library?limit=50&label=label-7&before=%d", 100, None),
    "uncached: job, random after": ("/library?limit=50&job=5&after=%d", 0, -100),
}


def uncached_listings(daemon, count, duration):
    results = {}
    for name, (template, low, high) in UNCACHED.items():
        high = count + (high or 0)
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as lua:
            lua.write(
                "local counter = 0\n"
                "request = function()\n"
                f"  counter = counter + 1\n"
                f"  local cursor = {low} + (counter * 7919 + math.random(0, 7918)) % {high - low}\n"
                f"  return wrk.format(nil, string.format(\"{template}\", cursor))\n"
                "end\n")
        try:
            url = f"http://127.0.0.1:{daemon.port}/"
            wrk(url, 16, 1, script=lua.name)
            result = wrk(url, 16, duration, script=lua.name)
        finally:
            os.unlink(lua.name)
        result.update(path=template.replace("%d", "N"))
        results[name] = result
    return results


def compare_uncached(args, data_dir, other, rounds=3):
    """The uncached listings of this build and `other`, a daemon at a time, alternated round by
    round on the same seed; per query, each build's median req/s and p99 and their ratio."""
    runs = {"this": [], "other": []}
    for _ in range(rounds):
        for side, binary in (("this", args.shutterd), ("other", other)):
            daemon = Daemon(binary, data_dir).start()
            try:
                daemon.wait_for("media directory checked")
                runs[side].append(uncached_listings(daemon, args.count, args.duration))
            finally:
                daemon.stop()
    summary = {}
    for name in UNCACHED:
        this = [run[name] for run in runs["this"]]
        theirs = [run[name] for run in runs["other"]]
        row = {}
        for side, values in (("this", this), ("other", theirs)):
            row[side] = {"rps": statistics.median(v["rps"] for v in values),
                         "p99_ms": statistics.median(v["p99_ms"] for v in values),
                         "p50_ms": statistics.median(v["p50_ms"] for v in values)}
        row["rps_ratio"] = round(row["this"]["rps"] / row["other"]["rps"], 3)
        row["p99_ratio"] = round(row["this"]["p99_ms"] / row["other"]["p99_ms"], 3)
        summary[name] = row
    return {"rounds": rounds, "other": other, "queries": summary}


def revalidation_vs_nginx(daemon, duration, rounds=3):
    """304s from /library against nginx's 304s for a small static file, alternated."""
    work = tempfile.mkdtemp(prefix="shutter-million-nginx-")
    try:
        www = os.path.join(work, "www")
        os.makedirs(www)
        with open(os.path.join(www, "library.json"), "w") as f:
            f.write('{"items":[],"next":null}\n' * 40)
        nginx_port = daemon.port + 1 if daemon.port < 65000 else daemon.port - 1
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(http_bench.nginx_conf(work, www, nginx_port, "off").replace(
                "types { image/jpeg jpg; }", "types { application/json json; }"))
        nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            theirs_url = f"http://127.0.0.1:{nginx_port}/library.json"
            conn = http.client.HTTPConnection("127.0.0.1", nginx_port, timeout=10)
            conn.request("GET", "/library.json")
            response = conn.getresponse()
            response.read()
            theirs_etag = response.getheader("ETag")
            conn.close()
            _, headers, _ = daemon.request("GET", "/library?limit=50")
            ours_etag = headers["etag"]
            ours_url = f"http://127.0.0.1:{daemon.port}/library?limit=50"
            for url, etag in ((ours_url, ours_etag), (theirs_url, theirs_etag)):
                status = subprocess.run(
                    ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", f"If-None-Match: {etag}", url],
                    capture_output=True, text=True).stdout
                if status != "304":
                    raise SystemExit(f"{url} with If-None-Match {etag} answered {status}, not 304")
            wrk(ours_url, 16, 1, [f"If-None-Match: {ours_etag}"])
            wrk(theirs_url, 16, 1, [f"If-None-Match: {theirs_etag}"])
            pairs = []
            for _ in range(rounds):
                ours = wrk(ours_url, 16, duration, [f"If-None-Match: {ours_etag}"])
                theirs = wrk(theirs_url, 16, duration, [f"If-None-Match: {theirs_etag}"])
                pairs.append({"shutterd": ours, "nginx": theirs, "ratio": round(ours["rps"] / theirs["rps"], 3)})
            return {"pairs": pairs,
                    "ratio": round(sum(p["shutterd"]["rps"] for p in pairs) / sum(p["nginx"]["rps"] for p in pairs), 3)}
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def snap_loop(daemon, stop_at, samples, stop_event=None):
    """Snaps one after another until `stop_at` (monotonic); appends (start, latency ms, status)."""
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=120)
    while time.monotonic() < stop_at and not (stop_event and stop_event.is_set()):
        started = time.monotonic()
        conn.request("POST", "/snap")
        response = conn.getresponse()
        response.read()
        samples.append((started, (time.monotonic() - started) * 1000, response.status))
        # Arrive at a random phase of the frame clock, as real requests do.
        time.sleep(random.uniform(0.005, 0.035))
    conn.close()


def percentiles(latencies):
    if not latencies:
        return None
    ordered = sorted(latencies)
    pick = lambda q: round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)
    return {"snaps": len(ordered), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": round(ordered[-1], 1)}


def retention(args, data_dir, remove=100_000, before_seconds=10, after_seconds=10):
    snap_args = ["--size", "640x480", "--fps", "30"]
    daemon = Daemon(args.shutterd, data_dir, snap_args).start()
    before = []
    try:
        # Snaps are measured once the start-up's media check (a listing of every file) is done.
        daemon.wait_for("media directory checked")
        snap_loop(daemon, time.monotonic() + before_seconds, before)
        _, _, body = daemon.request("GET", "/status")
        stored = json.loads(body)["library"]["pictures"]
    finally:
        daemon.stop()
    # The first snap makes it one more: exactly `remove` over the limit.
    limit = stored + 1 - remove
    daemon = Daemon(args.shutterd, data_dir,
                    [*snap_args, "--retention-max-pictures", str(limit), "--retention-min-age-s", "0"]).start()
    samples = []
    try:
        daemon.wait_for("media directory checked")
        triggered_at = time.monotonic()
        # Until the removal has been logged as finished, and `after_seconds` more.
        done = threading.Event()
        snapper = threading.Thread(target=snap_loop, args=(daemon, time.monotonic() + 600, samples, done))
        snapper.start()
        finished_at = None
        while finished_at is None and time.monotonic() < triggered_at + 600:
            for at, line in list(daemon.lines):
                if "retention removed pictures" in line and at > triggered_at:
                    finished_at = at
            time.sleep(0.05)
        time.sleep(after_seconds)
        done.set()
        snapper.join()
        retention_lines = [line for at, line in daemon.lines if "retention" in line]
        _, _, body = daemon.request("GET", "/status")
        after_status = json.loads(body)
    finally:
        daemon.stop()
    if finished_at is None:
        raise SystemExit("retention did not finish in 10 minutes:\n" + "\n".join(retention_lines[-5:]))
    during = [latency for start, latency, _ in samples if start <= finished_at]
    after = [latency for start, latency, _ in samples if start > finished_at]
    return {
        "removed_asked": remove, "limit": limit,
        "removal_seconds": round(finished_at - triggered_at, 2),
        "snap_before": percentiles([latency for _, latency, _ in before]),
        "snap_during": percentiles(during),
        "snap_after": percentiles(after),
        "failed_snaps": sum(1 for _, _, status in before + samples if status != 201),
        "retention_log": retention_lines[:3] + (["..."] if len(retention_lines) > 6 else []) + retention_lines[-3:],
        "pictures_after": after_status["library"]["pictures"],
    }


def event_cost(data_dir, remove=100_000):
    """SQLite's cost of the per-picture `picture.deleted` event in retention's transaction."""
    work = tempfile.mkdtemp(prefix="shutter-million-events-", dir=os.path.dirname(data_dir))
    try:
        results = {}
        for with_events in (False, True, False, True):
            copy = os.path.join(work, "catalog.sqlite")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(copy + suffix):
                    os.unlink(copy + suffix)
            shutil.copy(os.path.join(data_dir, "catalog.sqlite"), copy)
            connection = sqlite3.connect(copy, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.execute("PRAGMA cache_size=-1024")  # as the daemon's connection
            ids = [row[0] for row in connection.execute(
                "SELECT id FROM media INDEXED BY media_unkept WHERE keep = 0 ORDER BY id LIMIT ?", (remove,))]
            now = int(time.time() * 1000)
            started = time.monotonic()
            connection.execute("BEGIN IMMEDIATE")
            for id in ids:
                connection.execute("DELETE FROM media WHERE id = ?", (id,))
                if with_events:
                    connection.execute("INSERT INTO events (type, at, data) VALUES (?, ?, ?)",
                                       ("picture.deleted", now, f'{{"id":{id},"reason":"retention"}}'))
            connection.execute("COMMIT")
            seconds = time.monotonic() - started
            connection.close()
            results.setdefault("with_events_s" if with_events else "rows_only_s", []).append(round(seconds, 2))
        rows, events = statistics.mean(results["rows_only_s"]), statistics.mean(results["with_events_s"])
        results["events_cost_ratio"] = round(events / rows, 2)
        results["events_cost_us_per_picture"] = round((events - rows) / remove * 1e6, 1)
        return results
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--duration", type=int, default=5, help="seconds of each wrk run")
    parser.add_argument("--shutterd", default=os.path.join(ROOT, ".build/release/shutterd"))
    parser.add_argument("--seed-root", default="/var/tmp/shutter-million", help="where the seed is cached")
    parser.add_argument("--reseed", action="store_true", help="seed again even if a seed is cached")
    parser.add_argument("--retention-remove", type=int, default=100_000)
    parser.add_argument("--compare-start-up", metavar="BIN",
                        help="another build whose start-up is measured alternately with this one's")
    parser.add_argument("--compare-uncached", metavar="BIN",
                        help="another build whose uncached listings are measured alternately with this one's")
    parser.add_argument("--skip", default="", help="comma-separated steps to skip: start-up,listings,revalidation,retention,events")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    results = {"machine": {"cores": os.cpu_count(), "load_average_start": load_average()}}
    seed_dir, results["seed"] = prepared_seed(args)
    data_dir = os.path.join(seed_dir, "data")
    if args.compare_start_up:
        # Alternated, one start of each at a time, on the same seed: this build, the other, ...
        compared = {"this": [], "other": []}
        for _ in range(3):
            compared["this"] += start_up(args, data_dir, runs=1)["runs"]
            compared["other"] += start_up(args, data_dir, runs=1, binary=args.compare_start_up)["runs"]
        results["start_up_compared"] = {
            side: [{k: run[k] for k in ("exec_to_listening_ms", "beyond_sqlite_open_ms", "pictures")} for run in runs]
            for side, runs in compared.items()}
    if args.compare_uncached:
        results["uncached_compared"] = compare_uncached(args, data_dir, args.compare_uncached)
    if "start-up" not in skip:
        results["start_up"] = start_up(args, data_dir)
    if not {"listings", "revalidation"} <= skip:
        daemon = Daemon(args.shutterd, data_dir).start()
        try:
            daemon.wait_for("media directory checked")
            if "listings" not in skip:
                results["listings"] = listings(daemon, args.count, args.duration)
            if "revalidation" not in skip:
                results["revalidation_304"] = revalidation_vs_nginx(daemon, args.duration)
        finally:
            daemon.stop()
    if "events" not in skip:
        results["events_in_retention"] = event_cost(data_dir, args.retention_remove)
    if "retention" not in skip:
        # The removal spends the seed: a run stopped half way must not leave it marked reusable.
        os.unlink(os.path.join(seed_dir, "seed.json"))
        results["retention"] = retention(args, data_dir, args.retention_remove)
    results["machine"]["load_average_end"] = load_average()
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
