#!/usr/bin/env python3
"""Issue 2 benchmarks, side by side in one run (ratios, because these machines are noisy).

1. GET /media/{id}.jpg of a ~200 KB picture: shutterd against nginx serving the same file
   (1 worker, sendfile, keep-alive), wrk with 64 connections on loopback.
2. GET /library?limit=50 over 10,000 pictures: requests/s and latency percentiles.
3. POST /snap: p50/p95 latency over 200 sequential snaps at 30 fps, with the
   Server-Timing breakdown (wait for a fresh frame, encode, store) and the HTTP rest.

Usage: benchmarks/http_bench.py [--duration 10] [--binary .build/release/shutterd] [--json FILE]

`--only media-rounds [--rounds 6]` measures media the steady way (issue 12): four servers run at
once on the same picture, shutterd as installed (the access log on, stderr appended to a file
as `StandardError=append:` would; `--shutterd-stderr pipe` drains a pipe instead, as journald
would) beside nginx writing its default access log to a file, and the tuned pair (no log on
either side). Each round runs wrk on every server in turn, A B A B, and reads each server's CPU
time from /proc over exactly its wrk run; the servers of the other pair are stopped (SIGSTOP)
meanwhile, so an idle shutterd's camera takes nothing from the pair being measured. Prints the
ratio of requests per second per round and overall, the CPU per request of each side (for
shutterd also without its camera thread: "serving"), and the load average.
Needs: wrk, nginx-light (Debian); builds nothing itself (run `swift build -c release` first).
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start_daemon(binary, data_dir, args, defaults=False):
    """Starts shutterd tuned for measuring (no access log), or with `defaults` as a user runs it
    (the access log on, one line per request to stderr, which a pipe here drains as journald would)."""
    tuning = [] if defaults else ["--access-log", "false"]
    process = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, *tuning, *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in process.stderr:
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, int(match.group(1))
    raise SystemExit("shutterd did not start")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(30)


def post_snap(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/snap")
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 201, body
    return json.loads(body), response.getheader("Server-Timing")


def wrk(url, connections, duration, threads=2):
    out = subprocess.run(
        ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s", "--latency", url],
        capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+\w+)", out).group(1)
    latency = dict(re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+\w+)", out, re.M))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "transfer": transfer, "p50": latency.get("50"), "p99": latency.get("99"),
            "non2xx": int(errors.group(1)) if errors else 0}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def media_vs_nginx(binary, duration):
    work = tempfile.mkdtemp(prefix="shutter-bench-media-")
    # 1920x1080 at quality 75 makes a test-pattern JPEG of about 200 KB.
    daemon, port = start_daemon(binary, os.path.join(work, "data"), ["--size", "1920x1080", "--quality", "75"])
    try:
        record, _ = post_snap(port)
        path = os.path.join(work, "data", "media", f"{record['id']}.jpg")
        www = os.path.join(work, "www")
        os.makedirs(www)
        shutil.copy(path, os.path.join(www, "picture.jpg"))
        nginx_port = port + 1 if port < 65000 else port - 1
        conf = os.path.join(work, "nginx.conf")

        def write_conf(access_log):
            with open(conf, "w") as f:
                f.write(nginx_conf(work, www, nginx_port, access_log))

        write_conf("off")
        nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            ours_url = f"http://127.0.0.1:{port}/media/{record['id']}.jpg"
            theirs_url = f"http://127.0.0.1:{nginx_port}/picture.jpg"
            wrk(ours_url, 64, 2)  # warm up both
            wrk(theirs_url, 64, 2)
            cpu0 = cpu_seconds(daemon.pid)
            ours = wrk(ours_url, 64, duration)
            ours["cpu_s"] = cpu_seconds(daemon.pid) - cpu0
            theirs = wrk(theirs_url, 64, duration)
            ours2 = wrk(ours_url, 64, duration)  # again, to see the drift
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
        stop(daemon)
        daemon = None
        defaults = media_default_configuration(binary, work, duration)
        # nginx as it ships: its access log written to a file, the way shutterd's default
        # configuration writes its own (issue 12 compares the two with logging on in both).
        write_conf(f"{work}/access.log")
        nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        try:
            wrk(theirs_url, 64, 2)
            theirs_logging = wrk(theirs_url, 64, duration)
        finally:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
        return {"bytes": record["bytes"], "shutterd": ours, "nginx": theirs, "shutterd_again": ours2,
                "ratio": round(((ours["rps"] + ours2["rps"]) / 2) / theirs["rps"], 3),
                "shutterd_default_configuration": defaults,
                "ratio_default_configuration": round(defaults["rps"] / theirs["rps"], 3),
                "nginx_access_log": theirs_logging,
                "ratio_both_logging": round(defaults["rps"] / theirs_logging["rps"], 3)}
    finally:
        if daemon:
            stop(daemon)
        shutil.rmtree(work, ignore_errors=True)


def nginx_conf(work, www, port, access_log):
    """nginx with 1 worker and sendfile serving `www`; `access_log` is a path or `off`."""
    return f"""
user root;
worker_processes 1;
daemon off;
error_log {work}/nginx-error.log;
pid {work}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log {access_log};
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60;
    types {{ image/jpeg jpg; }}
    server {{
        listen 127.0.0.1:{port};
        root {www};
        etag on;
    }}
}}
"""


def media_default_configuration(binary, work, duration):
    """The same measurement with shutterd as it starts without options: the access log on."""
    daemon, port = start_daemon(binary, os.path.join(work, "data-default"), ["--size", "1920x1080", "--quality", "75"],
                                defaults=True)
    try:
        record, _ = post_snap(port)
        url = f"http://127.0.0.1:{port}/media/{record['id']}.jpg"
        wrk(url, 64, 2)
        cpu0 = cpu_seconds(daemon.pid)
        result = wrk(url, 64, duration)
        result["cpu_s"] = cpu_seconds(daemon.pid) - cpu0
        result["bytes"] = record["bytes"]
        return result
    finally:
        stop(daemon)


def library_listing(binary, duration, pictures=10000):
    # Seeded through the real API on tmpfs (fsync is free there), 64 snaps at a time
    # so each frame satisfies many waiting snaps (one address may have a quarter of
    # max_pending_snaps in progress: 256 lets all 64 in).
    work = tempfile.mkdtemp(prefix="shutter-bench-library-", dir="/dev/shm")
    daemon, port = start_daemon(binary, os.path.join(work, "data"),
                                ["--size", "160x120", "--fps", "120", "--max-pending-snaps", "256"])
    try:
        started = time.monotonic()
        done = [0]
        lock = threading.Lock()

        def seeder():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            while True:
                with lock:
                    if done[0] >= pictures:
                        return
                    done[0] += 1
                conn.request("POST", "/snap")
                response = conn.getresponse()
                response.read()
                assert response.status == 201

        threads = [threading.Thread(target=seeder) for _ in range(64)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seed_seconds = time.monotonic() - started
        url = f"http://127.0.0.1:{port}/library?limit=50"
        wrk(url, 16, 2)
        result = wrk(url, 16, duration)
        result["seeded"] = pictures
        result["seed_rate_per_s"] = round(pictures / seed_seconds)
        # A deep page (a cursor near the oldest end) must cost the same as the first.
        deep = wrk(f"http://127.0.0.1:{port}/library?limit=50&before=200", 16, duration)
        result["deep_page_rps"] = deep["rps"]
        result["deep_page_p99"] = deep["p99"]
        return result
    finally:
        stop(daemon)
        shutil.rmtree(work, ignore_errors=True)


def snap_latency(binary, count=200, data_root=None):
    work = tempfile.mkdtemp(prefix="shutter-bench-snap-", dir=data_root)
    daemon, port = start_daemon(binary, os.path.join(work, "data"), ["--size", "1280x720", "--fps", "30"])
    try:
        post_snap(port)
        totals, waits, encodes, stores = [], [], [], []
        for _ in range(count):
            t0 = time.perf_counter()
            _, timing = post_snap(port)
            totals.append((time.perf_counter() - t0) * 1000)
            parts = dict(re.findall(r"(\w+);dur=([\d.]+)", timing))
            waits.append(float(parts["wait"]))
            encodes.append(float(parts["encode"]))
            stores.append(float(parts["store"]))
            # Arrive at a random phase of the frame clock, as real requests do.
            time.sleep(0.005 + (hash(t0) % 1000) / 1000 * 0.03)
        pct = lambda xs, q: round(statistics.quantiles(xs, n=100)[q - 1], 2)
        rest = [t - w - e - s for t, w, e, s in zip(totals, waits, encodes, stores)]
        return {
            "snaps": count, "p50_ms": pct(totals, 50), "p95_ms": pct(totals, 95),
            "median_wait_for_frame_ms": round(statistics.median(waits), 2),
            "median_encode_ms": round(statistics.median(encodes), 2),
            "median_store_ms": round(statistics.median(stores), 2),
            "median_http_and_rest_ms": round(statistics.median(rest), 2),
            "filesystem": subprocess.run(["df", "--output=fstype", work], capture_output=True, text=True).stdout.split()[-1],
        }
    finally:
        stop(daemon)
        shutil.rmtree(work, ignore_errors=True)


def fsync_cost(data_root=None, count=200):
    """What one write+fsync+rename+dir-fsync of 150 KB costs on this disk, for the snap breakdown."""
    work = tempfile.mkdtemp(prefix="shutter-bench-fsync-", dir=data_root)
    payload = os.urandom(150_000)
    times = []
    try:
        dfd = os.open(work, os.O_RDONLY)
        for i in range(count):
            t0 = time.perf_counter()
            tmp = os.path.join(work, f".{i}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, payload)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(work, f"{i}.jpg"))
            os.fsync(dfd)
            times.append((time.perf_counter() - t0) * 1000)
        os.close(dfd)
        return round(statistics.median(times), 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def wait_listening(port, process, timeout=15):
    """Waits until a server just started accepts on `port` (a loaded machine starts nginx in more
    than the half second the scripts used to sleep); fails if the process exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"{process.args[0]} exited ({process.returncode}) before listening on {port}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{process.args[0]} did not listen on {port} within {timeout} s")
            time.sleep(0.05)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_daemon_logging_to(binary, data_dir, args, stderr_mode, log_path, defaults):
    """shutterd with its stderr as a service manager gives it: appended to `log_path`
    (`StandardError=append:`), or a pipe drained here as journald would (`pipe`)."""
    if stderr_mode == "pipe":
        return start_daemon(binary, data_dir, args, defaults=defaults)
    tuning = [] if defaults else ["--access-log", "false"]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, *tuning, *args],
            stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(log_path, "rb") as log:
            match = re.search(rb"listening .*address=[^ ]*:(\d+)", log.read())
        if match:
            return process, int(match.group(1))
        time.sleep(0.05)
    process.kill()
    raise SystemExit("shutterd did not start")


def process_tree_cpu_seconds(pid):
    """CPU time of `pid` and its children (nginx's master and worker)."""
    total = cpu_seconds(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(child) for child in f.read().split()]
    except FileNotFoundError:
        children = []
    return total + sum(cpu_seconds(child) for child in children)


def threads_cpu_seconds(pid, names):
    """CPU time of `pid`'s threads called one of `names` (shutterd's camera thread, whose 30
    frames a second cost the same whatever the request rate, so they would weigh most per request
    in the slowest rounds)."""
    total = 0.0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        if text[text.index("(") + 1:text.rindex(")")] in names:
            fields = text.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def wrk_counted(url, connections, duration):
    """wrk's figures plus the requests it completed, which CPU time is divided by."""
    out = subprocess.run(
        ["wrk", "-t", "2", "-c", str(connections), "-d", f"{duration}s", "--latency", url],
        capture_output=True, text=True, check=True).stdout
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
              "requests": int(re.search(r"(\d+) requests in", out).group(1))}
    latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M))
    result["p50"], result["p99"] = latency.get("50"), latency.get("99")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = int(errors.group(1)) if errors else 0
    return result


def count_lines(path):
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


# shutterd's camera thread (`OSThread.spawn(name:)` in ShutterCapture).
CAMERA_THREADS = {"shutter-capture"}


def media_rounds(binary, duration, rounds, stderr_mode):
    """Issue 12's comparison, alternated within one run (see the module's docstring)."""
    work = tempfile.mkdtemp(prefix="shutter-bench-rounds-")
    picture_args = ["--size", "1920x1080", "--quality", "75"]
    servers = {}
    try:
        for name, defaults in (("shutterd_default", True), ("shutterd_tuned", False)):
            process, port = start_daemon_logging_to(
                binary, os.path.join(work, name), picture_args, stderr_mode,
                os.path.join(work, f"{name}.stderr"), defaults)
            record, _ = post_snap(port)
            servers[name] = {"process": process, "url": f"http://127.0.0.1:{port}/media/{record['id']}.jpg",
                             "bytes": record["bytes"]}
        www = os.path.join(work, "www")
        os.makedirs(www)
        picture_id = servers["shutterd_default"]["url"].rsplit("/", 1)[1]
        shutil.copy(os.path.join(work, "shutterd_default", "media", picture_id), os.path.join(www, "picture.jpg"))
        for name, access_log in (("nginx_access_log", f"{work}/nginx-access.log"), ("nginx_no_log", "off")):
            prefix = os.path.join(work, name)
            os.makedirs(prefix)
            port = free_port()
            conf = os.path.join(prefix, "nginx.conf")
            with open(conf, "w") as f:
                f.write(nginx_conf(prefix, www, port, access_log))
            process = subprocess.Popen(["nginx", "-c", conf, "-p", prefix],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers[name] = {"process": process, "url": f"http://127.0.0.1:{port}/picture.jpg"}
        time.sleep(0.5)
        pairs = {"both_logging": ("shutterd_default", "nginx_access_log"),
                 "tuned": ("shutterd_tuned", "nginx_no_log")}
        for name, server in servers.items():
            wrk(server["url"], 64, 2)  # warm up every server once
        load_before = os.getloadavg()
        per_round = {pair: [] for pair in pairs}
        for _ in range(rounds):
            for pair, members in pairs.items():
                others = [s for n, s in servers.items() if n not in members]
                for other in others:
                    os.kill(other["process"].pid, signal.SIGSTOP)
                try:
                    measured = {}
                    for name in members:
                        server = servers[name]
                        pid = server["process"].pid
                        before = process_tree_cpu_seconds(pid), threads_cpu_seconds(pid, CAMERA_THREADS)
                        result = wrk_counted(server["url"], 64, duration)
                        spent = process_tree_cpu_seconds(pid) - before[0]
                        camera = threads_cpu_seconds(pid, CAMERA_THREADS) - before[1]
                        requests = max(result["requests"], 1)
                        result["cpu_us_per_request"] = round(spent / requests * 1e6, 1)
                        result["serving_cpu_us_per_request"] = round((spent - camera) / requests * 1e6, 1)
                        measured[name] = result
                finally:
                    for other in others:
                        os.kill(other["process"].pid, signal.SIGCONT)
                ours, theirs = (measured[name] for name in members)
                per_round[pair].append({
                    "ratio": round(ours["rps"] / theirs["rps"], 3),
                    "cpu_ratio": round(theirs["cpu_us_per_request"] / ours["cpu_us_per_request"], 3),
                    "serving_cpu_ratio": round(
                        theirs["serving_cpu_us_per_request"] / ours["serving_cpu_us_per_request"], 3),
                    members[0]: ours, members[1]: theirs})
        load_after = os.getloadavg()
        summary = {}
        for pair, members in pairs.items():
            rows = per_round[pair]
            ours_requests = sum(row[members[0]]["requests"] for row in rows)
            theirs_requests = sum(row[members[1]]["requests"] for row in rows)
            summary[pair] = {
                "ratios": [row["ratio"] for row in rows],
                "overall_ratio": round(ours_requests / theirs_requests, 3),
                "median_ratio": round(statistics.median(row["ratio"] for row in rows), 3),
                "cpu_ratios": [row["cpu_ratio"] for row in rows],
                "median_cpu_ratio": round(statistics.median(row["cpu_ratio"] for row in rows), 3),
                "serving_cpu_ratios": [row["serving_cpu_ratio"] for row in rows],
                "median_serving_cpu_ratio": round(statistics.median(row["serving_cpu_ratio"] for row in rows), 3),
                f"{members[0]}_rps": [row[members[0]]["rps"] for row in rows],
                f"{members[1]}_rps": [row[members[1]]["rps"] for row in rows],
                f"{members[0]}_cpu_us_per_request": [row[members[0]]["cpu_us_per_request"] for row in rows],
                f"{members[1]}_cpu_us_per_request": [row[members[1]]["cpu_us_per_request"] for row in rows],
                f"{members[0]}_serving_cpu_us_per_request":
                    [row[members[0]]["serving_cpu_us_per_request"] for row in rows],
            }
        for name in servers:
            servers[name]["process"].send_signal(signal.SIGTERM if name.startswith("shutterd") else signal.SIGQUIT)
        for server in servers.values():
            server["process"].wait(30)
        logged = {"nginx_access_log_lines": count_lines(f"{work}/nginx-access.log")}
        if stderr_mode == "file":
            logged["shutterd_default_stderr_lines"] = count_lines(os.path.join(work, "shutterd_default.stderr"))
        return {"rounds": rounds, "seconds_per_run": duration, "connections": 64,
                "bytes": servers["shutterd_default"]["bytes"], "shutterd_stderr": stderr_mode,
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in load_after],
                "summary": summary, "logged": logged, "per_round": per_round}
    finally:
        for server in servers.values():
            if server["process"].poll() is None:
                server["process"].kill()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/shutterd"))
    parser.add_argument("--only", choices=["media", "library", "snap", "media-rounds"])
    parser.add_argument("--rounds", type=int, default=6, help="media-rounds: rounds of A B A B")
    parser.add_argument("--shutterd-stderr", choices=["file", "pipe"], default="file",
                        help="media-rounds: shutterd's stderr appended to a file, or a pipe drained here")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    results = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release}}
    if args.only == "media-rounds":
        results["media_rounds"] = media_rounds(args.binary, args.duration, args.rounds, args.shutterd_stderr)
    if args.only in (None, "media"):
        results["media_vs_nginx"] = media_vs_nginx(args.binary, args.duration)
    if args.only in (None, "library"):
        results["library_10k"] = library_listing(args.binary, args.duration)
    if args.only in (None, "snap"):
        results["snap_latency"] = snap_latency(args.binary)
        results["snap_latency"]["median_write_fsync_rename_fsync_dir_ms"] = fsync_cost()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
