#!/usr/bin/env python3
"""The outbox under a burst (issue 14): snaps as fast as one client takes them into a daemon
mirroring to moto's S3 server on 127.0.0.1, against the same burst into a daemon with no sink,
side by side in one run. Prints snap latency p50/p99 for both, the S3 sink's peak lag (events
recorded and not yet delivered, from /status) and how long after the last snap the last upload
landed. Needs moto[server] and boto3 (scripts/test installs them) and a release build."""

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BUCKET = "bench"


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto():
    port = free_port()
    process = subprocess.Popen(["moto_server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).read()
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("moto_server did not start")
            time.sleep(0.1)
    import boto3
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="bench", aws_secret_access_key="bench")
    s3.create_bucket(Bucket=BUCKET)
    return process, endpoint, s3


def start_daemon(binary, data_dir, args, env):
    process = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir,
                                "--size", "640x480", "--fps", "30", "--access-log", "false", *args],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=dict(os.environ, **env))
    port = None
    sink_started = not args
    lines = []
    ready = threading.Event()

    def read():
        nonlocal port, sink_started
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace")
            lines.append(line)
            match = re.search(r"listening .*address=[^ ]*:(\d+)", line)
            if match:
                port = int(match.group(1))
            sink_started = sink_started or "sink starts" in line
            if port and sink_started:
                ready.set()
    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(30):
        process.kill()
        sys.exit("shutterd did not start:\n" + "".join(lines))
    return process, port


def get_json(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    body = json.loads(conn.getresponse().read())
    conn.close()
    return body


def burst(port, count):
    latencies = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(count):
        started = time.perf_counter()
        conn.request("POST", "/snap")
        response = conn.getresponse()
        response.read()
        latencies.append((time.perf_counter() - started) * 1000)
        assert response.status == 201, response.status
    conn.close()
    return latencies


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shutterd", default=os.path.join(HERE, "../.build/release/shutterd"))
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()

    moto, endpoint, s3 = start_moto()
    workdir = tempfile.mkdtemp(prefix="outbox-bench-")
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}
    processes = [moto]
    try:
        with_s3, with_s3_port = start_daemon(
            options.shutterd, os.path.join(workdir, "s3"), ["--s3-url", f"{endpoint}/{BUCKET}/bench"], env)
        processes.append(with_s3)
        plain, plain_port = start_daemon(options.shutterd, os.path.join(workdir, "none"), [], {})
        processes.append(plain)
        for round_number in range(1, options.rounds + 1):
            # Alternate which goes first, so neither always gets the quieter machine.
            order = [("none", plain_port), ("s3", with_s3_port)]
            if round_number % 2 == 0:
                order.reverse()
            results = {}
            for name, port in order:
                peak = [0]
                stop = threading.Event()

                def watch(port=port, peak=peak, stop=stop):
                    while not stop.is_set():
                        for sink in get_json(port, "/status")["outbox"]["sinks"]:
                            peak[0] = max(peak[0], sink["lag"])
                        time.sleep(0.05)
                watcher = threading.Thread(target=watch, daemon=True)
                watcher.start()
                before = len(s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])) if name == "s3" else 0
                latencies = burst(port, options.count)
                ended = time.monotonic()
                lag_s = None
                if name == "s3":
                    while True:
                        sinks = get_json(port, "/status")["outbox"]["sinks"]
                        if sinks[0]["lag"] == 0 and sinks[0]["delivered"] >= before + options.count:
                            break
                        time.sleep(0.01)
                    lag_s = time.monotonic() - ended
                stop.set()
                watcher.join()
                results[name] = (latencies, peak[0], lag_s)
            for name in ("none", "s3"):
                latencies, peak, lag_s = results[name]
                line = (f"round {round_number} {name:>4}: {options.count} snaps, p50 {percentile(latencies, 0.5):.1f} ms, "
                        f"p99 {percentile(latencies, 0.99):.1f} ms, mean {statistics.mean(latencies):.1f} ms")
                if name == "s3":
                    line += f"; peak outbox lag {peak} events, last upload {lag_s:.2f} s after the last snap"
                print(line, flush=True)
        stored = len(s3.list_objects_v2(Bucket=BUCKET, MaxKeys=10000).get("Contents", []))
        print(f"objects in the bucket: {stored} (expected {options.count * options.rounds})")
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
