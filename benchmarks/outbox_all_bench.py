#!/usr/bin/env python3
"""Issue 14's benchmark, as the issue words it: all three sinks at once against none.

1. latency: snap latency (POST /snap to the 201, one client, sequential) of a daemon with ALL
   THREE sinks on (MQTT to a real Mosquitto with the JPEG topic on, a webhook with include_jpeg
   to a local receiver, S3 mirror to moto's server with authentication on) against a daemon with
   no sink. Both daemons run for the whole run (same camera load, same start-up state); snaps go
   in rounds, a round of back-to-back snaps into one then the other, the order swapped each
   round, so the machine's noise (other engineers' builds) falls on both sides. p50/p99 of each,
   and the ratios (target: within 10%). Every sink's deliveries are counted at the end.
2. burst: a burst job of 1,800 frames at 30 fps (1280x720 test pattern) into a daemon mirroring
   to moto (authentication on), beside the same burst into a daemon with no sink (one after the
   other, the order swapped between rounds): frames dropped on each side (must be equal), the
   upload lag at the end (the job's last picture stored -> the last upload acknowledged) and the
   peak outbox depth (the newest event id minus the S3 sink's cursor, and the sink's own `lag`,
   from `/status` sampled every 20 ms).
3. down: the MQTT broker down for 10 minutes while a picture a second is taken, the daemon's
   RSS each minute beside a daemon without sinks taking the same pictures; then the broker back:
   how long until the backlog is delivered, and every picture's event counted at the subscriber.

Usage: benchmarks/outbox_all_bench.py [--only latency,burst,down] [--short] [--shutterd PATH]
  --short: 2 rounds of 20 snaps, a burst of 150 frames, the broker down for 30 s (about a minute
  in all), for a reviewer to check that it runs.
Needs: swift build -c release --product shutterd; Debian's mosquitto; moto[server], boto3 and
paho-mqtt (pip; scripts/test installs them). Data under $SHUTTER_BENCH_DATA (default /var/tmp).
"""

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests/e2e"))
from mqtt_broker import Broker, Subscriber  # noqa: E402
from webhook_receiver import WebhookReceiver  # noqa: E402

DATA_ROOT = os.environ.get("SHUTTER_BENCH_DATA", "/var/tmp")
BUCKET = "bench"
NAME = "bench"
PICTURE_TOPIC = f"shutterd/{NAME}/picture"
JPEG_TOPIC = f"shutterd/{NAME}/picture/jpeg"


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().strip()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Moto:
    """moto_server on a free port, with an IAM user allowed s3:*, the bucket, then
    authentication on (every request must be signed by that user's key)."""

    def __init__(self):
        import boto3
        from botocore.config import Config
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            ["moto_server", "-H", "127.0.0.1", "-p", str(self.port)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=dict(os.environ, AWS_DEFAULT_REGION="us-east-1"))
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("moto_server did not start")
                time.sleep(0.1)

        def client(service, key_id="any", secret="any"):
            return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1",
                                aws_access_key_id=key_id, aws_secret_access_key=secret,
                                config=Config(retries={"max_attempts": 3}))
        iam = client("iam")
        iam.create_user(UserName="shutterd")
        iam.put_user_policy(UserName="shutterd", PolicyName="s3", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        key = iam.create_access_key(UserName="shutterd")["AccessKey"]
        client("s3").create_bucket(Bucket=BUCKET)
        request = urllib.request.Request(self.endpoint + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        urllib.request.urlopen(request, timeout=5).read()
        self.env = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}
        self.s3 = client("s3", key["AccessKeyId"], key["SecretAccessKey"])

    def args(self, prefix):
        return ["--s3-url", f"{self.endpoint}/{BUCKET}/{prefix}", "--s3-region", "us-east-1", "--s3-mode", "mirror"]

    def count(self, prefix):
        total = 0
        # No "/" in the prefix: moto's signature check refuses a ListObjectsV2 whose query has one.
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            total += len(page.get("Contents", []))
        return total

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(20)


def picture_posts(receiver):
    """(event id, type, body length, multipart?) of every picture.created the webhook accepted."""
    return [(int(post.headers["x-shutter-event-id"]), post.headers["x-shutter-event"], len(post.body),
             post.headers.get("content-type", "").startswith("multipart/"))
            for post in receiver.accepted_posts() if post.headers["x-shutter-event"] == "picture.created"]


class Daemon:
    def __init__(self, shutterd, data_dir, args, env=None, sinks=0, size="1280x720"):
        self.process = subprocess.Popen(
            [shutterd, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--access-log", "false",
             "--size", size, "--fps", "30", "--max-job-shots", "100000", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=dict(os.environ, **(env or {})))
        self.pid = self.process.pid
        self.lines = []
        self.port = None
        ready = threading.Event()
        started_sinks = [0]

        def read():
            for raw in self.process.stderr:
                line = raw.decode("utf-8", "replace")
                if len(self.lines) < 5000:
                    self.lines.append(line)
                match = re.search(r"listening .*address=[^ ]*:(\d+)", line)
                if match:
                    self.port = int(match.group(1))
                if "sink starts with the events from now on" in line:
                    started_sinks[0] += 1
                if self.port and started_sinks[0] >= sinks:
                    ready.set()
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60):
            self.process.kill()
            raise SystemExit("shutterd did not start:\n" + "".join(self.lines[-30:]))

    def call(self, method, path, body=None, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.request(method, path, body=json.dumps(body) if body is not None else None)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        return response.status, json.loads(data) if data else None

    def status(self):
        return self.call("GET", "/status")[1]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


def snap_ms(conn):
    started = time.perf_counter()
    conn.request("POST", "/snap")
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status == 201, (response.status, body[:300])
    return elapsed, json.loads(body)


def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


# 1. Snap latency, all three sinks against none.

def latency(options, work):
    print(f"== snap latency, all three sinks against none: {options.rounds} rounds of {options.round_snaps}"
          f" snaps each side, {options.gap_ms} ms between snaps, 1280x720 at 30 fps", flush=True)
    broker = Broker(os.path.join(work, "broker")).start()
    subscriber = Subscriber(broker, topics=(PICTURE_TOPIC, JPEG_TOPIC), client_id="bench-all-latency")
    moto = Moto()
    receiver = WebhookReceiver()
    config = os.path.join(work, "hooks.json")
    with open(config, "w") as f:
        json.dump({"webhooks": [{"url": receiver.url, "events": ["picture.created"], "include_jpeg": True,
                                 "secret": "bench-secret"}]}, f)
    sinks = Daemon(options.shutterd, os.path.join(work, "all"),
                   ["--config", config, "--name", NAME, "--mqtt-url", broker.url(), *moto.args("latency")],
                   env=moto.env, sinks=3)
    plain = Daemon(options.shutterd, os.path.join(work, "none"), [])
    daemons = {"none": plain, "all": sinks}
    connections = {name: http.client.HTTPConnection("127.0.0.1", d.port, timeout=30) for name, d in daemons.items()}
    try:
        # Warm-up, not counted: the first snaps of a daemon pay for first pages and connections.
        for _ in range(5):
            for conn in connections.values():
                snap_ms(conn)
        warm = 5
        results = {"none": [], "all": []}
        per_round = []
        timeline = []  # (side, wall time at the request, ms): to line up with strace -tt
        print(f"  daemons: none pid {plain.pid}, all pid {sinks.pid}", flush=True)
        cpu_before = {name: cpu_seconds(d.pid) for name, d in daemons.items()}
        # What the receivers cost on the same two cores (moto, mosquitto; the webhook receiver and
        # the MQTT subscriber are threads of this script, which also runs the client).
        outside_before = (cpu_seconds(moto.process.pid), cpu_seconds(broker.process.pid), time.process_time())
        for round_number in range(options.rounds):
            order = ["none", "all"] if round_number % 2 == 0 else ["all", "none"]
            medians = {}
            for name in order:
                values = []
                for _ in range(options.round_snaps):
                    started = time.time()
                    values.append(snap_ms(connections[name])[0])
                    timeline.append((name, started, values[-1]))
                    if options.gap_ms:
                        time.sleep(options.gap_ms / 1000)
                results[name] += values
                medians[name] = statistics.median(values)
            per_round.append(medians)
        cpu_after = {name: cpu_seconds(d.pid) for name, d in daemons.items()}
        outside_after = (cpu_seconds(moto.process.pid), cpu_seconds(broker.process.pid), time.process_time())
        if options.dump_snaps:
            with open(options.dump_snaps, "w") as f:
                json.dump(timeline, f)
        total = warm + options.rounds * options.round_snaps
        wait_until(lambda: len(subscriber.on(PICTURE_TOPIC)) >= total and len(subscriber.on(JPEG_TOPIC)) >= total
                   and len(picture_posts(receiver)) >= total and moto.count("latency") >= total,
                   120, "every sink's deliveries")
        n = options.rounds * options.round_snaps
        print(f"snap latency, {n} snaps each side (POST /snap to the 201):")
        for name in ("none", "all"):
            values = results[name]
            print(f"  {name:5} p50 {percentile(values, 0.5):7.2f} ms  p90 {percentile(values, 0.9):7.2f} ms"
                  f"  p99 {percentile(values, 0.99):7.2f} ms  mean {statistics.mean(values):7.2f} ms"
                  f"  max {max(values):7.2f} ms  daemon CPU {cpu_after[name] - cpu_before[name]:.1f} s")
        ratio50 = percentile(results["all"], 0.5) / percentile(results["none"], 0.5)
        ratio99 = percentile(results["all"], 0.99) / percentile(results["none"], 0.99)
        print(f"  all/none: p50 x{ratio50:.3f}, p99 x{ratio99:.3f},"
              f" mean x{statistics.mean(results['all']) / statistics.mean(results['none']):.3f}")
        n_all = options.rounds * options.round_snaps
        extra = (cpu_after["all"] - cpu_before["all"] - cpu_after["none"] + cpu_before["none"]) / n_all * 1000
        moto_ms, broker_ms, script_ms = ((a - b) / n_all * 1000 for a, b in zip(outside_after, outside_before))
        print(f"  CPU per snap: the sinks in the daemon +{extra:.1f} ms (all minus none); beside it on the same"
              f" cores moto {moto_ms:.1f} ms, mosquitto {broker_ms:.1f} ms, this script (client for both sides,"
              f" webhook receiver, MQTT subscriber) {script_ms:.1f} ms")
        print("  per round p50 (none/all): " + ", ".join(f"{m['none']:.1f}/{m['all']:.1f}" for m in per_round))
        statuses = {s["name"]: s for s in sinks.status()["outbox"]["sinks"]}
        print(f"  delivered: MQTT {len(subscriber.on(PICTURE_TOPIC))} records + {len(subscriber.on(JPEG_TOPIC))}"
              f" JPEGs, webhook {len(picture_posts(receiver))} multipart"
              f" ({sum(1 for e in picture_posts(receiver) if e[3])} with the JPEG), S3 {moto.count('latency')} objects;"
              f" expected {total} each; sink failures "
              + ", ".join(f"{name} {s['failures']}" for name, s in statuses.items()), flush=True)
    finally:
        for conn in connections.values():
            conn.close()
        for d in daemons.values():
            d.stop()
        subscriber.close()
        broker.stop()
        receiver.close()
        moto.stop()


# 2. A burst of 1,800 frames at 30 fps into moto, against the same burst with no sink.

def iso_millis(text):
    import calendar
    seconds = calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S"))
    return seconds * 1000 + int(text[20:23])


def burst_once(options, work, moto, name, round_number):
    prefix = f"burst{round_number:02d}"
    with_s3 = name == "s3"
    daemon = Daemon(options.shutterd, os.path.join(work, f"burst-{name}-{round_number}"),
                    moto.args(prefix) if with_s3 else [], env=moto.env if with_s3 else None,
                    sinks=1 if with_s3 else 0)
    samples = []  # (wall time s, newest event id, S3 cursor, S3 lag, delivered)
    stop = threading.Event()

    def sample():
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
        while not stop.is_set():
            conn.request("GET", "/status")
            outbox = json.loads(conn.getresponse().read())["outbox"]
            now = time.time()
            for sink in outbox["sinks"]:
                samples.append((now, outbox["latest_event_id"], sink["cursor"], sink["lag"], sink["delivered"]))
            time.sleep(0.02)
        conn.close()
    try:
        rss_start = rss_kib(daemon.pid)
        load_start = loadavg().split()[0]
        cpu_start = (cpu_seconds(daemon.pid), cpu_seconds(moto.process.pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        status, job = daemon.call("POST", "/jobs", {"kind": "burst", "count": options.burst})
        assert status == 201, job
        job = wait_until(lambda: (lambda j: j if j["state"] in ("done", "failed", "cancelled") else None)(
            daemon.call("GET", f"/jobs/{job['id']}")[1]), options.burst / 30 * 4 + 60, "the burst")
        finished_at = iso_millis(job["finished_at"]) / 1000
        times = []
        path = f"/library?job={job['id']}&limit=500"
        while path:
            page = daemon.call("GET", path)[1]
            times += [iso_millis(item["taken_at"]) for item in page["items"]]
            path = page["next"]
        times.sort()
        interval_ms = 1000 / 30
        skipped = sum(max(0, round((b - a) / interval_ms) - 1) for a, b in zip(times, times[1:]))
        result = {"taken": job["taken"], "missed": job["missed"], "skipped": skipped,
                  "dropped": options.burst - job["taken"] + skipped, "rss_start": rss_start,
                  "load": load_start, "seconds": (times[-1] - times[0]) / 1000 if times else 0}
        if with_s3:
            # Every picture.created acknowledged: the S3 sink delivers only picture events, so its
            # delivered count reaches the burst's size (plus none before: a fresh daemon).
            wait_until(lambda: samples and samples[-1][4] >= job["taken"], 600, "the uploads")
            acknowledged = next(s[0] for s in samples if s[4] >= job["taken"])
            result.update(upload_lag_s=acknowledged - finished_at,
                          peak_depth=max(s[1] - s[2] for s in samples),
                          peak_lag=max(s[3] for s in samples),
                          objects=moto.count(prefix))
        result["rss_end"] = rss_kib(daemon.pid)
        # CPU from the job's start to the last upload (or the job's end): the daemon's, and
        # moto's (a Python server on the same two cores, its share of what the sink costs here).
        result["cpu_daemon"] = cpu_seconds(daemon.pid) - cpu_start[0]
        result["cpu_moto"] = cpu_seconds(moto.process.pid) - cpu_start[1]
        return result
    finally:
        stop.set()
        daemon.stop()


def burst(options, work):
    print(f"== a burst job of {options.burst} frames at 30 fps (1280x720), mirroring to moto (auth on) against"
          f" no sink, {options.burst_rounds} round(s), order swapped between rounds", flush=True)
    moto = Moto()
    try:
        for round_number in range(1, options.burst_rounds + 1):
            order = ["none", "s3"] if round_number % 2 else ["s3", "none"]
            results = {name: burst_once(options, work, moto, name, round_number) for name in order}
            for name in ("none", "s3"):
                r = results[name]
                line = (f"round {round_number} {name:>4}: taken {r['taken']}, missed {r['missed']}, frames skipped"
                        f" between shots {r['skipped']}, dropped {r['dropped']} (first to last picture"
                        f" {r['seconds']:.1f} s; load1 {r['load']} at its start); CPU daemon {r['cpu_daemon']:.1f} s,"
                        f" moto {r['cpu_moto']:.1f} s; RSS {r['rss_start'] / 1024:.1f} -> {r['rss_end'] / 1024:.1f} MiB")
                if name == "s3":
                    line += (f"; last upload acknowledged {r['upload_lag_s']:.2f} s after the last picture was stored;"
                             f" peak outbox depth {r['peak_depth']} events (sink lag field peak {r['peak_lag']});"
                             f" {r['objects']} objects in the bucket")
                print(line, flush=True)
    finally:
        moto.stop()


# 3. The MQTT broker down for 10 minutes at a picture a second.

def broker_down(options, work):
    minutes = options.down_minutes
    print(f"== the MQTT broker down for {minutes} min, a picture a second into a daemon with the MQTT sink"
          f" (JPEG topic on) and into one without sinks", flush=True)
    broker = Broker(os.path.join(work, "broker-down")).start()
    subscriber = Subscriber(broker, topics=(PICTURE_TOPIC, JPEG_TOPIC), client_id="bench-all-down")
    mqtt = Daemon(options.shutterd, os.path.join(work, "down-mqtt"), ["--name", NAME, "--mqtt-url", broker.url()],
                  sinks=1)
    plain = Daemon(options.shutterd, os.path.join(work, "down-none"), [])
    daemons = {"mqtt": mqtt, "none": plain}
    connections = {name: http.client.HTTPConnection("127.0.0.1", d.port, timeout=30) for name, d in daemons.items()}
    try:
        time.sleep(2)
        broker.stop()
        began = time.monotonic()
        rows = [(0, {name: rss_kib(d.pid) for name, d in daemons.items()}, mqtt.status()["outbox"])]
        peak = dict(rows[0][1])
        ids = []
        next_shot = began
        next_row = began + 60
        while time.monotonic() < began + minutes * 60:
            ids.append(snap_ms(connections["mqtt"])[1]["id"])
            snap_ms(connections["none"])
            peak = {name: max(peak[name], rss_kib(d.pid)) for name, d in daemons.items()}
            if time.monotonic() >= next_row:
                rows.append((round((time.monotonic() - began) / 60),
                             {name: rss_kib(d.pid) for name, d in daemons.items()}, mqtt.status()["outbox"]))
                next_row += 60
            next_shot += 1
            time.sleep(max(0, next_shot - time.monotonic()))
        rows.append(((time.monotonic() - began) / 60, {name: rss_kib(d.pid) for name, d in daemons.items()},
                     mqtt.status()["outbox"]))
        print(f"broker down {minutes} min, {len(ids)} pictures each; RSS (MiB), and the MQTT sink's /status:")
        print("  minute   mqtt    none   mqtt-none   newest event - cursor   sink lag field   failures")
        for minute, rss, outbox in rows:
            [sink] = outbox["sinks"]
            print(f"  {minute:6.1f} {rss['mqtt'] / 1024:6.1f}  {rss['none'] / 1024:6.1f}  "
                  f"{(rss['mqtt'] - rss['none']) / 1024:9.1f}   {outbox['latest_event_id'] - sink['cursor']:21d}"
                  f"   {sink['lag']:14d}   {sink['failures']:8d}")
        print(f"  peak: mqtt {peak['mqtt'] / 1024:.1f} MiB, none {peak['none'] / 1024:.1f} MiB", flush=True)
        broker.start()
        back = time.monotonic()
        wanted = set(ids)
        connected = None
        while True:
            if connected is None and mqtt.status()["outbox"]["sinks"][0]["connected"]:
                connected = time.monotonic() - back
            records = [json.loads(p)["id"] for p in subscriber.on(PICTURE_TOPIC)]
            if wanted <= set(records):
                break
            if time.monotonic() - back > 900:
                raise SystemExit(f"the backlog was not delivered: {len(set(records) & wanted)} of {len(wanted)}")
            time.sleep(0.05)
        delivered_in = time.monotonic() - back
        time.sleep(1)
        records = [json.loads(p)["id"] for p in subscriber.on(PICTURE_TOPIC)]
        jpegs = len(subscriber.on(JPEG_TOPIC))
        in_order = records == sorted(records)
        print(f"  broker back: the sink connected after {connected if connected is not None else float('nan'):.1f} s;"
              f" all {len(wanted)} picture events delivered {delivered_in:.1f} s after the broker was back"
              f" ({len(records)} records received, {len(set(records))} distinct, {jpegs} JPEGs, in order: {in_order});"
              f" RSS then {rss_kib(mqtt.pid) / 1024:.1f} MiB", flush=True)
    finally:
        for conn in connections.values():
            conn.close()
        for d in daemons.values():
            d.stop()
        subscriber.close()
        broker.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="latency,burst,down", help="comma-separated: latency, burst, down")
    parser.add_argument("--rounds", type=int, default=8, help="latency rounds (each side once a round)")
    parser.add_argument("--round-snaps", type=int, default=50, help="snaps a side per latency round")
    parser.add_argument("--gap-ms", type=float, default=100, help="pause after each snap in a latency round")
    parser.add_argument("--dump-snaps", help="write every latency snap (side, wall time, ms) to this JSON file")
    parser.add_argument("--burst", type=int, default=1800, help="frames in the burst job")
    parser.add_argument("--burst-rounds", type=int, default=2)
    parser.add_argument("--down-minutes", type=float, default=10)
    parser.add_argument("--short", action="store_true", help="a run of about a minute")
    parser.add_argument("--shutterd", default=os.path.join(ROOT, ".build/release/shutterd"))
    options = parser.parse_args()
    if options.short:
        options.rounds, options.round_snaps, options.burst, options.burst_rounds = 2, 20, 150, 1
        options.down_minutes = 0.5
    parts = set(options.only.split(","))
    print(f"loadavg at start: {loadavg()}", flush=True)
    with tempfile.TemporaryDirectory(dir=DATA_ROOT, prefix="shutter-outbox-all-") as work:
        if "latency" in parts:
            latency(options, work)
        if "burst" in parts:
            burst(options, work)
        if "down" in parts:
            broker_down(options, work)
    print(f"loadavg at end: {loadavg()}", flush=True)


if __name__ == "__main__":
    main()
