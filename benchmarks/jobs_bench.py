#!/usr/bin/env python3
"""Issue 4 benchmarks: jobs writing every picture to disk as they go.

1. A burst at 1280x720, 30 fps, for 60 s (1,800 frames) into the catalog: frames dropped
   (target 0: every frame stored once, in capture order) and the commit rate.
2. An interval job of 10,000 shots at the fastest allowed rate (one per frame interval): the
   daemon's RSS at the start and the end (target: flat within 2 MB).

Usage: benchmarks/jobs_bench.py [--burst-seconds 60] [--interval-shots 10000]
Needs: swift build -c release. Runs on the test pattern; data on the project's disk (fsync real).
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHUTTERD = os.path.join(ROOT, ".build/release/shutterd")
# Pictures go to a real disk (fsync costs what it costs), outside the repository.
DATA_ROOT = os.environ.get("SHUTTER_BENCH_DATA", "/var/tmp")


def start(data, args):
    process = subprocess.Popen([SHUTTERD, "--listen", "127.0.0.1:0", "--data-dir", data, "--access-log", "false",
                                "--max-job-shots", "100000", *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in process.stderr:
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, int(match.group(1))
    raise SystemExit("shutterd did not start")


def call(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=json.dumps(body) if body is not None else None)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else None


def iso_millis(text):
    """Milliseconds since 1970 of `2026-11-30T04:40:00.123Z`."""
    import calendar
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(text[20:23])


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def wait_done(port, job_id, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, job = call(port, "GET", f"/jobs/{job_id}")
        if job["state"] in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.5)
    raise SystemExit(f"job {job_id} did not finish")


def burst(seconds):
    data = tempfile.mkdtemp(prefix="shutter-bench-burst-", dir=DATA_ROOT)
    process, port = start(data, ["--size", "1280x720", "--fps", "30"])
    try:
        count = 30 * seconds
        started = time.monotonic()
        status, job = call(port, "POST", "/jobs", {"kind": "burst", "count": count})
        assert status == 201, job
        job = wait_done(port, job["id"], seconds * 3 + 30)
        elapsed = time.monotonic() - started
        # Frames skipped between shots would not lower `taken`; they show as gaps of more
        # than one frame interval between successive pictures' capture times.
        times = []
        path = f"/library?job={job['id']}&limit=500"
        while path:
            _, page = call(port, "GET", path)
            times += [iso_millis(item["taken_at"]) for item in page["items"]]
            path = page["next"]
        interval_ms = 1000 / 30
        skipped = sum(max(0, round((b - a) / interval_ms) - 1) for a, b in zip(times, times[1:]))
        return {"frames_asked": count, "taken": job["taken"], "missed": job["missed"],
                "frames_skipped_between_shots": skipped, "dropped": count - job["taken"] + skipped,
                "seconds": round(elapsed, 1), "commit_rate_per_s": round(job["taken"] / elapsed, 1),
                "state": job["state"]}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        subprocess.run(["rm", "-rf", data])


def interval(shots):
    data = tempfile.mkdtemp(prefix="shutter-bench-interval-", dir=DATA_ROOT)
    process, port = start(data, ["--size", "640x480", "--fps", "30"])
    try:
        status, job = call(port, "POST", "/jobs", {"kind": "interval", "every": 1 / 30 + 0.0001, "count": shots})
        assert status == 201, job
        time.sleep(10)  # past start-up allocations and the first catalog pages
        start_rss = rss_kib(process.pid)
        samples = [start_rss]
        deadline = time.monotonic() + shots / 30 * 2 + 60
        while time.monotonic() < deadline:
            _, current = call(port, "GET", f"/jobs/{job['id']}")
            samples.append(rss_kib(process.pid))
            if current["state"] in ("done", "failed", "cancelled"):
                break
            time.sleep(5)
        end_rss = rss_kib(process.pid)
        return {"shots": shots, "taken": current["taken"], "missed": current["missed"], "state": current["state"],
                "rss_start_kib": start_rss, "rss_end_kib": end_rss, "rss_max_kib": max(samples),
                "rss_growth_kib": end_rss - start_rss, "rss_samples_kib": samples}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        subprocess.run(["rm", "-rf", data])


def main():
    global SHUTTERD
    parser = argparse.ArgumentParser()
    parser.add_argument("--burst-seconds", type=int, default=60)
    parser.add_argument("--interval-shots", type=int, default=10000)
    parser.add_argument("--only", choices=["burst", "interval"])
    parser.add_argument("--shutterd", default=SHUTTERD,
                        help="the daemon to measure (default: this checkout's release build), e.g. an older build to compare")
    args = parser.parse_args()
    SHUTTERD = args.shutterd
    results = {}
    if args.only in (None, "burst"):
        results["burst_1280x720_30fps"] = burst(args.burst_seconds)
    if args.only in (None, "interval"):
        results["interval_fastest"] = interval(args.interval_shots)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
