#!/usr/bin/env python3
"""Issue 5: the live preview, shutterd's /preview.mjpg against ustreamer's /stream, side by side.

Both servers capture MJPEG at 1280x720, 30 fps from the emulated UVC camera (Tests/EmulatedCamera,
loaded with LD_PRELOAD) and pass the camera's frames through untouched (shutterd always does for
MJPEG; ustreamer with --encoder=HW). The camera runs with EMUCAM_STAMP=1: each frame carries its
capture time in a JPEG COM segment, which both servers pass on, so the viewers can measure the
latency from capture to receipt.

For N viewers (1, 10, 50, 100) of one server at a time, benchmarks/mjpeg_viewers.c (compiled
here with gcc -O2 into .build/bench/) holds N connections in one epoll loop for a warm-up and
then --seconds, and reports frames per second per viewer, latency percentiles and the server's
CPU time and memory over exactly the measured window (read from /proc by the client, so the
window is the same). The servers run alternately for each N (ustreamer first for odd rows,
shutterd first for even ones; --repeat R runs each pair R times, pooling frames and CPU), a fresh process for every measurement, so machine noise hits both
and peak RSS belongs to that N. A last row per server adds stalled viewers (connect, send the
request, never read) to 10 readers, to see what slow clients cost in memory.

CPU per delivered frame = the server's CPU seconds (utime + stime, all threads) in the window /
frames delivered to all viewers in the window. The emulated camera runs inside each server
(LD_PRELOAD), so its frame generation (a memcpy of a pre-encoded frame per tick) is in both
servers' CPU: the same for both. Its thread is named emucam-frames, and the JSON (--json) has
every server's CPU by thread name, that one included.

The installed build: --servers ustreamer,shutterd,shutterd-installed also measures the binary
scripts/install installs (--static-swift-stdlib, linked by lld; --shutterd-installed PATH, default
.build/static/release/shutterd): the Swift runtime linked in rather than loaded as shared
libraries, which is what decides most of the resident memory (benchmarks/README.md).

HTTPS: --servers shutterd,shutterd-https measures shutterd over HTTP against itself over HTTPS
(a self-signed certificate made here; the client's TLS handshakes happen before the window), and
the ratio column is then HTTPS/HTTP.

Usage: benchmarks/preview_bench.py [--seconds 10] [--warmup 2] [--viewers 1,10,50,100]
       [--stalled 20] [--servers ustreamer,shutterd] [--repeat 1] [--json results.json]
       [--shutterd PATH] [--shutterd-installed PATH]
Needs: swift build -c release --product shutterd, ustreamer, gcc, libturbojpeg0-dev; for
shutterd-installed also the build scripts/install runs (swift build -c release
--static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs --product
shutterd --build-path .build/static).
"""

import argparse
import json
import os
import shlex
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "e2e"))
from emucam import emucam_env  # noqa: E402

SHUTTERD = os.path.join(ROOT, ".build/release/shutterd")
# The binary scripts/install installs: the Swift runtime linked statically.
SHUTTERD_INSTALLED = os.path.join(ROOT, ".build/static/release/shutterd")
CLIENT_SOURCE = os.path.join(ROOT, "benchmarks", "mjpeg_viewers.c")
CLIENT = os.path.join(ROOT, ".build", "bench", "mjpeg_viewers")
# Extra options for shutterd (--shutterd-args), such as an overlay to measure.
SHUTTERD_ARGS = []
SIZE, FPS = "1280x720", 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_client():
    if not os.path.exists(CLIENT) or os.path.getmtime(CLIENT) < os.path.getmtime(CLIENT_SOURCE):
        os.makedirs(os.path.dirname(CLIENT), exist_ok=True)
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-o", CLIENT, CLIENT_SOURCE, "-lssl", "-lcrypto"],
                       check=True)
    return CLIENT


def wait_until(predicate, what, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not come up in {timeout} s")


def get(url):
    # Loopback HTTPS (shutterd-https) with the benchmark's own self-signed certificate.
    context = ssl._create_unverified_context() if url.startswith("https:") else None
    with urllib.request.urlopen(url, timeout=5, context=context) as response:
        return response.status, response.read()


def make_certificate(directory):
    cert, key = os.path.join(directory, "bench.crt"), os.path.join(directory, "bench.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    return cert, key


class Server:
    """A fresh daemon on the stamped emulated camera; `path` is its MJPEG stream."""

    def __init__(self, name):
        self.name = name
        self.tls = name == "shutterd-https"
        self.port = free_port()
        self.data = None
        env = emucam_env(stamp=True)
        if name == "ustreamer":
            args = ["ustreamer", "--device=/dev/video0", "--format=MJPEG", f"--resolution={SIZE}",
                    f"--desired-fps={FPS}", "--encoder=HW", "--host=127.0.0.1", f"--port={self.port}"]
            self.path = "/stream"
        else:
            self.data = tempfile.mkdtemp(prefix="shutter-bench-preview-")
            binary = SHUTTERD_INSTALLED if name == "shutterd-installed" else SHUTTERD
            args = [binary, "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.data,
                    "--camera", "/dev/video0", "--size", SIZE, "--fps", str(FPS),
                    "--camera-formats", "mjpeg", "--access-log", "false", *SHUTTERD_ARGS]
            if name == "shutterd-https":
                cert, key = make_certificate(self.data)
                args += ["--tls-cert", cert, "--tls-key", key]
            self.path = "/preview.mjpg"
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"
        if name == "ustreamer":
            wait_until(lambda: json.loads(get(base + "/state")[1])["result"]["source"]["online"], "ustreamer")
        else:
            wait_until(lambda: get(base + "/healthz")[0] == 200, "shutterd")
            wait_until(lambda: get(base + "/preview.jpg")[0] == 200, "shutterd's first frame")
        time.sleep(1.0)  # past shutterd's camera warm-up (500 ms) and ustreamer's first frames

    def stream_available(self):
        """False when the server has no such stream (shutterd before /preview.mjpg landed)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as raw:
                s = ssl._create_unverified_context().wrap_socket(raw) if self.tls else raw
                s.sendall(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
                return s.recv(64).split(b" ")[1] == b"200"
        except (OSError, IndexError):
            return False

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.data:
            subprocess.run(["rm", "-rf", self.data])


def measure(name, viewers, seconds, warmup, stalled=0):
    server = Server(name)
    try:
        if not server.stream_available():
            return {"server": name, "viewers": viewers, "stalled": stalled, "unavailable": True}
        out = subprocess.run(
            [CLIENT, "--port", str(server.port), "--path", server.path, "--viewers", str(viewers),
             "--stalled", str(stalled), "--seconds", str(seconds), "--warmup", str(warmup),
             "--fps", str(FPS), "--pid", str(server.process.pid), "--tls", "1" if server.tls else "0"],
            capture_output=True, text=True, check=True, timeout=seconds + warmup + 60)
        result = json.loads(out.stdout)
        alive = server.process.poll() is None
    finally:
        server.stop()
    daemon = result.pop("server")
    frames = result["frames"]
    result.update({
        "server": name, "daemon_alive": alive,
        "cpu_s": daemon["cpu_s"], "cpu_source": daemon["cpu_source"], "cpu_s_ticks": daemon["cpu_s_ticks"],
        "core_percent": round(100 * daemon["cpu_s"] / seconds, 1),
        "cpu_ms_per_frame": round(1000 * daemon["cpu_s"] / frames, 4) if frames else None,
        "rss_mib_end": round(daemon["rss_kib_end"] / 1024, 1),
        "rss_mib_max": round(daemon["rss_kib_max"] / 1024, 1),
        "rss_mib_start": round(daemon["rss_kib_start"] / 1024, 1),
        "hwm_mib": round(daemon["hwm_kib"] / 1024, 1),
        "threads_cpu_s": daemon["threads"],
        # The emulated camera's frame thread (named by libemucam), the same work in both servers.
        "emulator_cpu_s": daemon["threads"].get("emucam-frames"),
    })
    return result


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:.{digits}f}"


def combine(runs):
    """One row from the repeated runs of a server at one N: frames and CPU pooled, the worst
    viewer's fps, medians of the per-run latency percentiles, the largest RSS."""
    if len(runs) == 1 or any(r.get("unavailable") for r in runs):
        return dict(runs[0], runs=1, cpu_ms_runs=[runs[0].get("cpu_ms_per_frame")])
    frames = sum(r["frames"] for r in runs)
    cpu = sum(r["cpu_s"] for r in runs)
    med = statistics.median
    return {
        "server": runs[0]["server"], "viewers": runs[0]["viewers"], "stalled": runs[0]["stalled"],
        "runs": len(runs), "frames": frames, "errors": sum(r["errors"] for r in runs),
        "fps": {"min": min(r["fps"]["min"] for r in runs), "median": med([r["fps"]["median"] for r in runs])},
        "latency_ms": {k: med([r["latency_ms"][k] for r in runs]) for k in ("p50", "p95", "p99")},
        "core_percent": round(statistics.mean(r["core_percent"] for r in runs), 1),
        "cpu_ms_per_frame": round(1000 * cpu / frames, 4) if frames else None,
        "cpu_ms_runs": [r["cpu_ms_per_frame"] for r in runs],
        "rss_mib_end": max(r["rss_mib_end"] for r in runs), "hwm_mib": max(r["hwm_mib"] for r in runs),
    }


def table(rows, servers):
    lines = [
        "| viewers | server | fps per viewer min / median | latency p50 / p95 (p99) ms | CPU % of a core "
        "| CPU ms per delivered frame | ratio shutterd/ustreamer (https/http) | RSS MiB end (peak) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    grouped = {}
    for r in rows:
        grouped.setdefault((r["server"], r["viewers"], r.get("stalled", 0)), []).append(r)
    by_key = {key: combine(runs) for key, runs in grouped.items()}
    keys = sorted({(r["viewers"], r.get("stalled", 0)) for r in rows}, key=lambda k: (k[1] > 0, k[0]))
    for viewers, stalled in keys:
        label = str(viewers) if not stalled else f"{viewers} + {stalled} stalled"
        for name in servers:
            # shutterd is compared with ustreamer; shutterd over HTTPS with shutterd over HTTP.
            peer = {"shutterd": "ustreamer", "shutterd-installed": "ustreamer", "shutterd-https": "shutterd"}
            theirs = by_key.get((peer.get(name), viewers, stalled))
            r = by_key.get((name, viewers, stalled))
            if r is None:
                continue
            if r.get("unavailable"):
                lines.append(f"| {label} | {name} | no `/preview.mjpg` yet | | | | | |")
                continue
            ratio = ""
            if theirs and not theirs.get("unavailable") and theirs["cpu_ms_per_frame"]:
                ratio = f"**{r['cpu_ms_per_frame'] / theirs['cpu_ms_per_frame']:.2f}**"
                if r["runs"] > 1 and len(theirs["cpu_ms_runs"]) == r["runs"]:
                    each = [a / b for a, b in zip(r["cpu_ms_runs"], theirs["cpu_ms_runs"])]
                    ratio += f" ({min(each):.2f}–{max(each):.2f})"
            cpu = fmt(r["cpu_ms_per_frame"], 3)
            if r["runs"] > 1:
                cpu += f" ({min(r['cpu_ms_runs']):.3f}–{max(r['cpu_ms_runs']):.3f}, {r['runs']} runs)"
            lat = r["latency_ms"]
            errors = f" ({r['errors']} errors)" if r["errors"] else ""
            lines.append(
                f"| {label} | {name} | {r['fps']['min']:.1f} / {r['fps']['median']:.1f}{errors} "
                f"| {fmt(lat['p50'])} / {fmt(lat['p95'])} ({fmt(lat['p99'])}) | {r['core_percent']:.1f} "
                f"| {cpu} | {ratio} | {r['rss_mib_end']:.1f} ({r['hwm_mib']:.1f}) |")
    return "\n".join(lines)


def main():
    global SHUTTERD, SHUTTERD_INSTALLED
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=2)
    parser.add_argument("--viewers", default="1,10,50,100")
    parser.add_argument("--stalled", type=int, default=20, help="stalled viewers beside 10 readers (0: skip)")
    parser.add_argument("--servers", default="ustreamer,shutterd")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each pair, alternating which server goes first; CPU pooled, ranges shown")
    parser.add_argument("--json", help="also write every result here")
    parser.add_argument("--shutterd", default=SHUTTERD, help="the daemon to measure (default: %(default)s)")
    parser.add_argument("--shutterd-installed", default=SHUTTERD_INSTALLED,
                        help="the --static-swift-stdlib build, server shutterd-installed (default: %(default)s)")
    parser.add_argument("--shutterd-args", default="",
                        help="more options for shutterd, e.g. \"--overlay-text '%%H:%%M:%%S' --overlay-on preview\"")
    args = parser.parse_args()
    SHUTTERD_ARGS[:] = shlex.split(args.shutterd_args)
    servers = args.servers.split(",")
    build_client()
    SHUTTERD = args.shutterd
    SHUTTERD_INSTALLED = args.shutterd_installed
    if "shutterd" in servers and not os.path.exists(SHUTTERD):
        raise SystemExit(f"{SHUTTERD} is missing: swift build -c release --product shutterd")
    if "shutterd-installed" in servers and not os.path.exists(SHUTTERD_INSTALLED):
        raise SystemExit(f"{SHUTTERD_INSTALLED} is missing: build it as scripts/install does")

    load_before = os.getloadavg()
    started = time.time()
    plan = [(n, 0) for n in map(int, args.viewers.split(","))]
    if args.stalled:
        plan.append((10, args.stalled))
    rows = []
    for i, (viewers, stalled) in enumerate(p for p in plan for _ in range(args.repeat)):
        order = servers if i % 2 == 0 else servers[::-1]
        for name in order:
            result = measure(name, viewers, args.seconds, args.warmup, stalled)
            rows.append(result)
            if result.get("unavailable"):
                print(f"{name} N={viewers}: no stream at its path", file=sys.stderr)
                continue
            print(f"{name} N={viewers}{' + %d stalled' % stalled if stalled else ''}: "
                  f"fps min {result['fps']['min']} median {result['fps']['median']}, "
                  f"latency p50 {result['latency_ms']['p50']} ms p95 {result['latency_ms']['p95']} ms, "
                  f"{result['core_percent']}% CPU, {result['cpu_ms_per_frame']} ms/frame, "
                  f"RSS {result['rss_mib_end']} MiB (peak {result['hwm_mib']}), errors {result['errors']}, "
                  f"threads {result['threads_cpu_s']}", file=sys.stderr)
    load_after = os.getloadavg()
    summary = {
        "camera": f"emulated UVC (EMUCAM_STAMP=1), MJPEG {SIZE} at {FPS} fps, passthrough in both",
        "seconds": args.seconds, "warmup": args.warmup,
        "load_average_before": load_before, "load_average_after": load_after,
        "duration_s": round(time.time() - started, 1), "results": rows,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    print(table(rows, servers))
    print(f"\nload average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
          f"{summary['duration_s']} s")


if __name__ == "__main__":
    main()
