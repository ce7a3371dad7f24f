#!/usr/bin/env python3
"""Issue 15's comparisons that no other script made, each side by side in one run, alternated:

1. `serving`: a small file and a `304` against nginx, over HTTP and over HTTPS (the same
   certificate, protocols and OpenSSL defaults as tls_bench.py). The small file is a thumbnail
   (`GET /media/{id}.jpg?width=320`, about 10 KB) against nginx sending the same bytes from a
   file; the `304` is `GET /media/{id}.jpg` with the picture's `If-None-Match` against nginx's
   `304` for the same file with its own ETag. wrk with 64 keep-alive connections; rounds of
   ours then theirs, the idle shutterd stopped (SIGSTOP) while nginx is measured, CPU per request
   of each side read from /proc over exactly its run. Both sides without access logs.
2. `snapshot`: a still of the live camera. ustreamer's `GET /snapshot` against shutterd's
   `GET /preview.jpg` (the newest frame), both capturing MJPEG at 1280x720, 30 fps from the
   emulated UVC camera and passing its frames through; requests alternate between the two on one
   keep-alive connection each, each sent after a random pause of up to a frame interval (33 ms),
   so that both sides are asked at every moment of the camera's frame clock rather than at a
   moment set by how long the other side's answer took (with a fixed 10 ms pause, one side's
   latency moved the other's: ustreamer's `/snapshot` waits for its next frame at some moments,
   and its p50 went from 0.6 ms to 42 ms when ours got faster). Shown beside them, without a peer (ustreamer has neither): our
   `GET /preview.jpg?fresh=true` (waits for the next frame) and `POST /snap` (a new frame,
   stored: written, fsynced, in the catalog).
3. `mqtt`: how long a picture takes to reach an MQTT subscriber. Ours: `POST /snap` sent until
   `mosquitto_sub` prints its `picture.created` event (and, from the same snaps, from the `201`'s
   arrival to that print: the event's own hop). The floor: a line written to a connected
   `mosquitto_pub -l` until the same `mosquitto_sub` prints it, on the same broker (Debian's
   mosquitto with a password file, QoS 1 on every side). Snaps and floor messages alternate.

Usage: benchmarks/peers_bench.py [--only serving,snapshot,mqtt] [--duration 3] [--rounds 3]
       [--requests 200] [--snaps 100] [--shutterd PATH] [--json FILE]
Needs: swift build -c release --product shutterd; wrk, nginx-light, openssl, ustreamer,
mosquitto, mosquitto-clients (Debian); paho-mqtt (pip, for Tests/e2e/mqtt_broker.py).
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "e2e"))
from emucam import emucam_env  # noqa: E402
from http_bench import cpu_seconds, free_port, nginx_conf, start_daemon, stop, wait_listening  # noqa: E402
from tls_bench import make_certificate, start_https_daemon  # noqa: E402

SHUTTERD = os.path.join(ROOT, ".build/release/shutterd")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary_ms(values):
    return {"n": len(values), "p50": round(percentile(values, 0.5), 3), "p90": round(percentile(values, 0.9), 3),
            "p99": round(percentile(values, 0.99), 3), "mean": round(statistics.mean(values), 3)}


def wrk_with(url, duration, headers=(), connections=64):
    command = ["wrk", "-t", "2", "-c", str(connections), "-d", f"{duration}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    out = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "requests": requests,
            "p50": dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M)).get("50"),
            "p99": dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M)).get("99"),
            "non2xx3xx": int(errors.group(1)) if errors else 0,
            "socket_errors": socket_errors.group(1) if socket_errors else None}


def process_cpu(pid):
    """CPU seconds of a process and its children (nginx's worker)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return cpu_seconds(pid) + sum(cpu_seconds(int(child)) for child in children)


def fetch(scheme, port, path, headers=None, cafile=None):
    if scheme == "https":
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30,
                                           context=ssl.create_default_context(cafile=cafile))
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), body


def serving(shutterd, duration, rounds):
    """Small file and 304 against nginx, over HTTP and HTTPS (see the module's docstring)."""
    work = tempfile.mkdtemp(prefix="shutter-bench-peers-")
    cert, key = make_certificate(work)
    picture_args = ["--size", "1920x1080", "--quality", "75"]
    processes = []
    results = {}
    try:
        plain, plain_port = start_daemon(shutterd, os.path.join(work, "plain"), picture_args)
        processes.append(plain)
        secure, secure_port, _ = start_https_daemon(shutterd, os.path.join(work, "secure"), cert, key, picture_args)
        processes.append(secure)
        conn = http.client.HTTPConnection("127.0.0.1", plain_port, timeout=30)
        conn.request("POST", "/snap")
        response = conn.getresponse()
        record = json.loads(response.read())
        conn.close()
        assert response.status == 201, record
        picture = f"/media/{record['id']}.jpg"
        thumbnail = picture + "?width=320"
        www = os.path.join(work, "www")
        os.makedirs(www)
        shutil.copy(os.path.join(work, "plain", "media", f"{record['id']}.jpg"), os.path.join(www, "picture.jpg"))
        status, headers, small = fetch("http", plain_port, thumbnail)
        assert status == 200, status
        with open(os.path.join(www, "small.jpg"), "wb") as f:
            f.write(small)
        # The HTTPS daemon serves the same picture: the same file, snapped through its own API.
        sconn = http.client.HTTPSConnection("127.0.0.1", secure_port, timeout=30,
                                            context=ssl.create_default_context(cafile=cert))
        sconn.request("POST", "/snap")
        sresponse = sconn.getresponse()
        secure_record = json.loads(sresponse.read())
        sconn.close()
        assert sresponse.status == 201, secure_record
        os.remove(os.path.join(work, "secure", "media", f"{secure_record['id']}.jpg"))
        shutil.copy(os.path.join(www, "picture.jpg"), os.path.join(work, "secure", "media",
                                                                   f"{secure_record['id']}.jpg"))
        secure_picture = f"/media/{secure_record['id']}.jpg"

        nginx = {}
        for scheme in ("http", "https"):
            prefix = os.path.join(work, f"nginx-{scheme}")
            os.makedirs(prefix)
            port = free_port()
            conf = nginx_conf(prefix, www, port, "off")
            if scheme == "https":
                conf = conf.replace(f"listen 127.0.0.1:{port};", f"""listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_conf_command Options KTLS;""")
            path = os.path.join(prefix, "nginx.conf")
            with open(path, "w") as f:
                f.write(conf)
            process = subprocess.Popen(["nginx", "-c", path, "-p", prefix], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            processes.append(process)
            nginx[scheme] = (process, port)
            wait_listening(port, process)

        ours = {"http": (plain, plain_port, picture), "https": (secure, secure_port, secure_picture)}
        load_before = os.getloadavg()
        for scheme in ("http", "https"):
            daemon, port, our_picture = ours[scheme]
            nginx_process, nginx_port = nginx[scheme]
            _, our_head, our_small = fetch(scheme, port, our_picture + "?width=320", cafile=cert)
            _, their_head, their_small = fetch(scheme, nginx_port, "/small.jpg", cafile=cert)
            _, our_full, _ = fetch(scheme, port, our_picture, cafile=cert)
            _, their_full, _ = fetch(scheme, nginx_port, "/picture.jpg", cafile=cert)
            our_etag, their_etag = our_full["ETag"], their_full["ETag"]
            assert fetch(scheme, port, our_picture, {"If-None-Match": our_etag}, cert)[0] == 304
            assert fetch(scheme, nginx_port, "/picture.jpg", {"If-None-Match": their_etag}, cert)[0] == 304
            base = f"{scheme}://127.0.0.1"
            kinds = {
                "small_file": ((f"{base}:{port}{our_picture}?width=320", ()),
                               (f"{base}:{nginx_port}/small.jpg", ())),
                "not_modified": ((f"{base}:{port}{our_picture}", (f"If-None-Match: {our_etag}",)),
                                 (f"{base}:{nginx_port}/picture.jpg", (f"If-None-Match: {their_etag}",))),
            }
            for kind, ((our_url, our_headers), (their_url, their_headers)) in kinds.items():
                wrk_with(our_url, 1, our_headers)  # warm up both
                wrk_with(their_url, 1, their_headers)
                per_round = []
                for _ in range(rounds):
                    cpu0 = process_cpu(daemon.pid)
                    mine = wrk_with(our_url, duration, our_headers)
                    mine["cpu_us_per_request"] = round((process_cpu(daemon.pid) - cpu0) / max(mine["requests"], 1)
                                                       * 1e6, 1)
                    os.kill(daemon.pid, signal.SIGSTOP)
                    try:
                        cpu0 = process_cpu(nginx_process.pid)
                        theirs = wrk_with(their_url, duration, their_headers)
                        theirs["cpu_us_per_request"] = round(
                            (process_cpu(nginx_process.pid) - cpu0) / max(theirs["requests"], 1) * 1e6, 1)
                    finally:
                        os.kill(daemon.pid, signal.SIGCONT)
                    per_round.append({"shutterd": mine, "nginx": theirs, "ratio": round(mine["rps"] / theirs["rps"], 3)})
                ours_requests = sum(r["shutterd"]["requests"] for r in per_round)
                theirs_requests = sum(r["nginx"]["requests"] for r in per_round)
                results[f"{scheme}_{kind}"] = {
                    "bytes": len(our_small) if kind == "small_file" else 0,
                    "nginx_bytes": len(their_small) if kind == "small_file" else 0,
                    "shutterd_rps": round(ours_requests / (rounds * duration), 1),
                    "nginx_rps": round(theirs_requests / (rounds * duration), 1),
                    "ratio": round(ours_requests / theirs_requests, 3),
                    "ratios": [r["ratio"] for r in per_round],
                    "shutterd_cpu_us_per_request": statistics.median(
                        r["shutterd"]["cpu_us_per_request"] for r in per_round),
                    "nginx_cpu_us_per_request": statistics.median(r["nginx"]["cpu_us_per_request"] for r in per_round),
                    "per_round": per_round,
                }
                print(f"{scheme} {kind}: shutterd {results[f'{scheme}_{kind}']['shutterd_rps']} req/s, nginx "
                      f"{results[f'{scheme}_{kind}']['nginx_rps']} req/s, ratio {results[f'{scheme}_{kind}']['ratio']}",
                      file=sys.stderr)
        results["load_average_before"] = [round(x, 2) for x in load_before]
        results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        results["seconds_per_run"], results["rounds"], results["connections"] = duration, rounds, 64
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                try:
                    os.kill(process.pid, signal.SIGCONT)
                except OSError:
                    pass
                process.send_signal(signal.SIGQUIT if process.args[0] == "nginx" else signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
        shutil.rmtree(work, ignore_errors=True)


def wait_for_http(port, path, ready, timeout=20):
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, _, body = fetch("http", port, path)
            if ready(status, body):
                return
        except (OSError, http.client.HTTPException):
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"port {port} did not answer {path}")
        time.sleep(0.1)


def timed_request(conn, method, path):
    started = time.perf_counter()
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    assert response.status in (200, 201), (path, response.status, body[:200])
    return elapsed, len(body)


def snapshot(shutterd, requests):
    """Still latency against ustreamer's /snapshot (see the module's docstring)."""
    work = tempfile.mkdtemp(prefix="shutter-bench-snapshot-")
    ustreamer_port, shutterd_port = free_port(), free_port()
    env = emucam_env(stamp=True)
    ustreamer = subprocess.Popen(
        ["ustreamer", "--device=/dev/video0", "--format=MJPEG", "--resolution=1280x720", "--desired-fps=30",
         "--encoder=HW", "--host=127.0.0.1", f"--port={ustreamer_port}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    daemon = subprocess.Popen(
        [shutterd, "--listen", f"127.0.0.1:{shutterd_port}", "--data-dir", os.path.join(work, "data"),
         "--camera", "/dev/video0", "--size", "1280x720", "--fps", "30", "--camera-formats", "mjpeg",
         "--access-log", "false"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_http(ustreamer_port, "/snapshot", lambda status, body: status == 200 and body[:2] == b"\xff\xd8")
        wait_for_http(shutterd_port, "/preview.jpg", lambda status, body: status == 200 and body[:2] == b"\xff\xd8")
        time.sleep(1)
        theirs_conn = http.client.HTTPConnection("127.0.0.1", ustreamer_port, timeout=30)
        ours_conn = http.client.HTTPConnection("127.0.0.1", shutterd_port, timeout=30)
        runs = {"ustreamer_snapshot": [], "shutterd_preview_jpg": [], "shutterd_preview_jpg_fresh": [],
                "shutterd_post_snap": []}
        sizes = {name: 0 for name in runs}
        pauses = random.Random(15)  # the same pauses for every daemon measured
        load_before = os.getloadavg()
        for index in range(requests):
            plan = [("ustreamer_snapshot", theirs_conn, "GET", "/snapshot"),
                    ("shutterd_preview_jpg", ours_conn, "GET", "/preview.jpg")]
            if index % 2:
                plan.reverse()
            plan += [("shutterd_preview_jpg_fresh", ours_conn, "GET", "/preview.jpg?fresh=true")]
            if index % 4 == 0:  # a stored picture each: a quarter as many, to keep the data small
                plan.append(("shutterd_post_snap", ours_conn, "POST", "/snap"))
            for name, conn, method, path in plan:
                time.sleep(pauses.uniform(0, 1 / 30))
                elapsed, size = timed_request(conn, method, path)
                runs[name].append(elapsed)
                sizes[name] = size
        theirs_conn.close()
        ours_conn.close()
        result = {name: summary_ms(values) for name, values in runs.items()}
        result["bytes"] = sizes
        result["ratio_p50"] = round(result["shutterd_preview_jpg"]["p50"] / result["ustreamer_snapshot"]["p50"], 3)
        result["ratio_p99"] = round(result["shutterd_preview_jpg"]["p99"] / result["ustreamer_snapshot"]["p99"], 3)
        result["camera"] = "emulated UVC, MJPEG 1280x720 at 30 fps, passthrough in both"
        result["load_average_before"] = [round(x, 2) for x in load_before]
        result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        print(f"snapshot p50: ustreamer {result['ustreamer_snapshot']['p50']} ms, shutterd "
              f"{result['shutterd_preview_jpg']['p50']} ms", file=sys.stderr)
        return result
    finally:
        for process in (ustreamer, daemon):
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(work, ignore_errors=True)


class Printed:
    """mosquitto_sub's lines as they arrive, each with the monotonic time it was read."""

    def __init__(self, process):
        self.lines = []
        self.condition = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self.thread.start()

    def _read(self, process):
        for raw in process.stdout:
            now = time.perf_counter()
            with self.condition:
                self.lines.append((now, raw.decode("utf-8", "replace").rstrip("\n")))
                self.condition.notify_all()

    def wait_for(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                for at, line in self.lines:
                    if predicate(line):
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"mosquitto_sub printed no such line within {timeout} s")
                self.condition.wait(left)


def mqtt(shutterd, snaps):
    """A picture's event to a subscriber against mosquitto_pub to mosquitto_sub (see the docstring)."""
    from mqtt_broker import PASSWORD, USER, Broker
    work = tempfile.mkdtemp(prefix="shutter-bench-mqtt-")
    broker = Broker(os.path.join(work, "broker")).start()
    login = ["-h", "127.0.0.1", "-p", str(broker.port), "-u", USER, "-P", PASSWORD, "-q", "1"]
    subscriber = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", *login, "-v", "-t", "shutterd/bench/picture",
                                   "-t", "bench/floor"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    printed = Printed(subscriber)
    publisher = subprocess.Popen(["mosquitto_pub", *login, "-t", "bench/floor", "-l"], stdin=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
    daemon, port = start_daemon(shutterd, os.path.join(work, "data"),
                                ["--name", "bench", "--mqtt-url", broker.url(), "--mqtt-publish-jpeg", "false",
                                 "--size", "1280x720", "--fps", "30"])
    try:
        time.sleep(2)
        # The subscription is in place once a floor message comes through.
        publisher.stdin.write(b"floor-warmup\n")
        publisher.stdin.flush()
        printed.wait_for(lambda line: line == "bench/floor floor-warmup")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        total, after_answer, snap_only, floor = [], [], [], []
        load_before = os.getloadavg()
        for index in range(snaps):
            sent = time.perf_counter()
            conn.request("POST", "/snap")
            response = conn.getresponse()
            record = json.loads(response.read())
            answered = time.perf_counter()
            assert response.status == 201, record
            marker = f'"id":{record["id"]},'
            received = printed.wait_for(lambda line: line.startswith("shutterd/bench/picture ")
                                        and "picture.created" in line and marker in line.replace(" ", ""))
            total.append((received - sent) * 1000)
            after_answer.append((received - answered) * 1000)
            snap_only.append((answered - sent) * 1000)
            time.sleep(0.02)
            message = f"floor-{index}"
            sent = time.perf_counter()
            publisher.stdin.write(message.encode() + b"\n")
            publisher.stdin.flush()
            received = printed.wait_for(lambda line: line == f"bench/floor {message}")
            floor.append((received - sent) * 1000)
            time.sleep(0.02)
        conn.close()
        result = {"snap_to_event": summary_ms(total), "answer_to_event": summary_ms(after_answer),
                  "snap_answer": summary_ms(snap_only), "mosquitto_pub_to_sub": summary_ms(floor),
                  "ratio_p50": round(percentile(total, 0.5) / percentile(floor, 0.5), 3),
                  "answer_to_event_ratio_p50": round(
                      max(percentile(after_answer, 0.5), 0.001) / percentile(floor, 0.5), 3),
                  "broker": subprocess.run(["mosquitto", "-h"], capture_output=True, text=True).stdout.split("\n")[0],
                  "qos": 1, "load_average_before": [round(x, 2) for x in load_before],
                  "load_average_after": [round(x, 2) for x in os.getloadavg()]}
        print(f"mqtt p50: snap to event {result['snap_to_event']['p50']} ms, answer to event "
              f"{result['answer_to_event']['p50']} ms, mosquitto_pub to sub {result['mosquitto_pub_to_sub']['p50']} ms",
              file=sys.stderr)
        return result
    finally:
        stop(daemon)
        for process in (publisher, subscriber):
            process.terminate()
            process.wait(10)
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="serving,snapshot,mqtt", help="comma-separated: serving, snapshot, mqtt")
    parser.add_argument("--duration", type=int, default=3, help="serving: seconds of each wrk run")
    parser.add_argument("--rounds", type=int, default=3, help="serving: rounds of ours then theirs")
    parser.add_argument("--requests", type=int, default=200, help="snapshot: requests of each kind")
    parser.add_argument("--snaps", type=int, default=100, help="mqtt: snaps, and as many floor messages")
    parser.add_argument("--shutterd", default=SHUTTERD, help="the daemon to measure (default: %(default)s)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    parts = args.only.split(",")
    results = {}
    if "serving" in parts:
        results["serving"] = serving(args.shutterd, args.duration, args.rounds)
    if "snapshot" in parts:
        results["snapshot"] = snapshot(args.shutterd, args.requests)
    if "mqtt" in parts:
        results["mqtt"] = mqtt(args.shutterd, args.snaps)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
