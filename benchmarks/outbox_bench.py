#!/usr/bin/env python3
"""Issue 14 benchmarks: the MQTT sink's cost and its memory while the broker is down.

1. Snap latency with the MQTT sink on (a real Mosquitto broker, JPEGs published) against a
   daemon with no sink, side by side: both running, snaps alternating between them, p50 and p99
   of each (target: within 10%).
2. The broker down for some minutes while a picture a second is taken: the daemon's RSS at the
   start, the peak and the end (the outbox is the catalog's history on disk, so it should stay
   flat), then the broker back: how long until every picture taken meanwhile is delivered.

Usage: benchmarks/outbox_bench.py [--snaps 300] [--down-minutes 5] [--shutterd PATH]
Needs: swift build -c release; Debian's mosquitto; paho-mqtt (pip). Runs on the test pattern.
"""

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests/e2e"))
from mqtt_broker import Broker, Subscriber  # noqa: E402

DATA_ROOT = os.environ.get("SHUTTER_BENCH_DATA", "/var/tmp")


def start(shutterd, data, args):
    process = subprocess.Popen([shutterd, "--listen", "127.0.0.1:0", "--data-dir", data, "--access-log", "false",
                                "--size", "1280x720", "--fps", "30", *args],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in process.stderr:
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, int(match.group(1))
    raise SystemExit("shutterd did not start")


def snap(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    started = time.monotonic()
    conn.request("POST", "/snap")
    response = conn.getresponse()
    record = json.loads(response.read())
    elapsed = time.monotonic() - started
    conn.close()
    assert response.status == 201, record
    return elapsed * 1000, record


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])


def latency(shutterd, snaps, work):
    broker = Broker(os.path.join(work, "broker")).start()
    subscriber = Subscriber(broker, topics=("shutterd/bench/picture",), client_id="bench-latency")
    plain, plain_port = start(shutterd, os.path.join(work, "plain"), [])
    mqtt, mqtt_port = start(shutterd, os.path.join(work, "mqtt"), ["--name", "bench", "--mqtt-url", broker.url()])
    try:
        time.sleep(2)
        results = {"none": [], "mqtt": []}
        for index in range(snaps):
            # Alternating, so both see the same moments of a noisy machine.
            order = [("none", plain_port), ("mqtt", mqtt_port)]
            if index % 2:
                order.reverse()
            for name, port in order:
                results[name].append(snap(port)[0])
            time.sleep(0.05)
        subscriber.wait_for(lambda s: len(s.on("shutterd/bench/picture")) >= snaps, timeout=60,
                            what="every picture delivered")
        print(f"snap latency over {snaps} snaps each, 1280x720, alternating:")
        for name, values in results.items():
            print(f"  {name:5} p50 {percentile(values, 0.5):7.2f} ms   p99 {percentile(values, 0.99):7.2f} ms")
        ratio50 = percentile(results["mqtt"], 0.5) / percentile(results["none"], 0.5)
        ratio99 = percentile(results["mqtt"], 0.99) / percentile(results["none"], 0.99)
        print(f"  mqtt/none: p50 x{ratio50:.3f}, p99 x{ratio99:.3f}")
    finally:
        for process in (plain, mqtt):
            process.terminate()
            process.wait(20)
        subscriber.close()
        broker.stop()


def broker_down(shutterd, minutes, work):
    broker = Broker(os.path.join(work, "broker-down")).start()
    subscriber = Subscriber(broker, topics=("shutterd/bench/picture",), client_id="bench-down")
    daemon, port = start(shutterd, os.path.join(work, "down"), ["--name", "bench", "--mqtt-url", broker.url()])
    # The same load on a daemon without a sink, at the same time: what growth is the sink's.
    plain, plain_port = start(shutterd, os.path.join(work, "down-plain"), [])
    try:
        time.sleep(2)
        broker.stop()
        start_rss = {"mqtt": rss_kib(daemon.pid), "none": rss_kib(plain.pid)}
        peak = dict(start_rss)
        ids = []
        deadline = time.monotonic() + minutes * 60
        next_shot = time.monotonic()
        while time.monotonic() < deadline:
            ids.append(snap(port)[1]["id"])
            snap(plain_port)
            peak = {"mqtt": max(peak["mqtt"], rss_kib(daemon.pid)), "none": max(peak["none"], rss_kib(plain.pid))}
            next_shot += 1
            time.sleep(max(0, next_shot - time.monotonic()))
        end_rss = {"mqtt": rss_kib(daemon.pid), "none": rss_kib(plain.pid)}
        print(f"broker down {minutes} min, a picture a second ({len(ids)} pictures):")
        for name in ("mqtt", "none"):
            print(f"  {name:5} RSS start {start_rss[name] / 1024:.1f} MiB, peak {peak[name] / 1024:.1f} MiB,"
                  f" end {end_rss[name] / 1024:.1f} MiB")
        broker.start()
        back = time.monotonic()
        wanted = set(ids)
        subscriber.wait_for(
            lambda s: wanted <= {json.loads(p)["id"] for p in s.on("shutterd/bench/picture")}, timeout=600,
            what="the backlog")
        print(f"  broker back: all {len(ids)} delivered in {time.monotonic() - back:.1f} s"
              f" (RSS then {rss_kib(daemon.pid) / 1024:.1f} MiB)")
    finally:
        for process in (daemon, plain):
            process.terminate()
            process.wait(20)
        subscriber.close()
        broker.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--snaps", type=int, default=300)
    parser.add_argument("--down-minutes", type=float, default=5)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--shutterd", default=os.path.join(ROOT, ".build/release/shutterd"))
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=DATA_ROOT, prefix="shutter-outbox-bench-") as work:
        if not options.skip_latency:
            latency(options.shutterd, options.snaps, work)
        broker_down(options.shutterd, options.down_minutes, work)


if __name__ == "__main__":
    main()
