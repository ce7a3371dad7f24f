#!/usr/bin/env python3
"""Instructions the event loop spends on one request, counted by callgrind: a figure the
machine's load does not move, for comparing builds on the request path (issues 12 and 13).

    python3 benchmarks/loop_instructions.py [--binary BIN ...] [--requests 1000,5000]

For each binary (stripped of its DWARF 5 debug information first with `strip -g`, which
Debian 12's valgrind cannot read), for each path (`/media/1.jpg`, and `/library?limit=50`
revalidated with the ETag it was just given, a `304`): starts the daemon under
`valgrind --tool=callgrind`, collecting only inside `EventLoop.run` (the loop thread), sends N
keep-alive requests from one client, and reads the total. The difference between the two
counts divided by the difference in requests is what one request costs the loop: start-up,
the snap and the timers fall out. Needs Debian's `valgrind`.
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def count(binary, path, requests, work):
    port = free_port()
    data = tempfile.mkdtemp(dir=work)
    out = os.path.join(work, f"callgrind-{port}.out")
    daemon = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
         "--toggle-collect=*EventLoopC3run*", binary, "--listen", f"127.0.0.1:{port}", "--data-dir", data,
         "--camera", "test-pattern", "--size", "320x240", "--fps", "5"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).read()
                break
            except OSError:
                time.sleep(0.5)
        urllib.request.urlopen(urllib.request.Request(base + "/snap", method="POST"), timeout=60).read()
        extra = ""
        if path.startswith("/library"):
            etag = urllib.request.urlopen(base + path, timeout=30).headers["ETag"]
            extra = f"If-None-Match: {etag}\r\n"
        request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: wrk\r\nAccept: */*\r\n{extra}\r\n"
        with socket.create_connection(("127.0.0.1", port)) as sock:
            buffered = b""
            for _ in range(requests):
                sock.sendall(request.encode())
                while b"\r\n\r\n" not in buffered:
                    buffered += sock.recv(65536)
                head, rest = buffered.split(b"\r\n\r\n", 1)
                found = re.search(rb"(?i)content-length: *(\d+)", head)
                length = int(found.group(1)) if found else 0
                while len(rest) < length:
                    rest += sock.recv(65536)
                buffered = rest[length:]
    finally:
        daemon.send_signal(2)
        daemon.wait(timeout=120)
    text = subprocess.run(["callgrind_annotate", out], capture_output=True, text=True).stdout
    return int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", action="append", help="a shutterd build (repeatable)")
    parser.add_argument("--requests", default="1000,5000", help="the two request counts")
    parser.add_argument("--paths", default="/media/1.jpg,/library?limit=50")
    args = parser.parse_args()
    low, high = (int(n) for n in args.requests.split(","))
    binaries = args.binary or [os.path.join(ROOT, ".build/release/shutterd")]
    work = tempfile.mkdtemp(prefix="shutter-loop-instructions-")
    try:
        print("| build | path | instructions a request |")
        print("|---|---|---|")
        for binary in binaries:
            stripped = os.path.join(work, f"shutterd-{len(os.listdir(work))}")
            subprocess.run(["strip", "-g", "-o", stripped, binary], check=True)
            for path in args.paths.split(","):
                per_request = (count(stripped, path, high, work) - count(stripped, path, low, work)) / (high - low)
                print(f"| {binary} | `{path}` | {per_request / 1000:.1f}k |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
