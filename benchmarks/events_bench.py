#!/usr/bin/env python3
"""The change feed's cost (issue 13): 1,000 idle /events streams and 1,000 idle long-polls held
open against one daemon, its RSS and CPU while they sit idle, and how long a snap's event takes
to reach every open stream.

    python3 benchmarks/events_bench.py [--shutterd .build/release/shutterd] [--streams 1000]
        [--polls 1000] [--idle 20] [--snaps 20]

Standard library only. Prints figures; asserts nothing.
"""

import argparse
import http.client
import json
import os
import re
import resource
import selectors
import socket
import statistics
import subprocess
import tempfile
import threading
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def start_daemon(binary, data_dir, connections, keep_alive_ms):
    process = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--camera", "test-pattern",
         "--size", "640x480", "--fps", "30", "--access-log", "false",
         "--max-connections", str(connections), "--max-connections-per-peer", str(connections),
         "--max-event-streams", str(connections), "--max-long-polls", str(connections),
         "--idle-timeout-ms", "3600000", "--write-timeout-ms", "3600000",
         "--event-keep-alive-ms", str(keep_alive_ms)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for raw in process.stderr:
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            port = int(match.group(1))
            # Keep reading its log so it never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
            return process, port
    raise SystemExit("shutterd did not start")


def request(port, method, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def open_stream(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /events?types=picture.created HTTP/1.1\r\nHost: localhost\r\n\r\n")
    return sock


def open_long_poll(port, after):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET /library?after={after}&wait=300 HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    return sock


def read_heads(socks, timeout=30):
    """Reads each stream's response head (and the retry hint) so the rest is events only."""
    selector = selectors.DefaultSelector()
    buffers = {}
    for sock in socks:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        buffers[sock] = b""
    pending = set(socks)
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for key, _ in selector.select(1):
            sock = key.fileobj
            buffers[sock] += sock.recv(65536)
            if b"retry: 1000\n\n" in buffers[sock]:
                assert buffers[sock].startswith(b"HTTP/1.1 200"), buffers[sock][:200]
                pending.discard(sock)
                selector.unregister(sock)
    selector.close()
    if pending:
        raise SystemExit(f"{len(pending)} streams did not open")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shutterd", default=".build/release/shutterd")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=20.0, help="seconds measured while idle")
    parser.add_argument("--snaps", type=int, default=20)
    parser.add_argument("--keep-alive-ms", type=int, default=15000,
                        help="event_keep_alive_ms (a comment to every stream this often)")
    options = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = options.streams + options.polls + 256
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, needed)), hard))

    with tempfile.TemporaryDirectory() as data_dir:
        process, port = start_daemon(options.shutterd, data_dir, options.streams + options.polls + 64,
                                     options.keep_alive_ms)
        try:
            status, body = request(port, "POST", "/snap")
            assert status == 201, body
            newest = json.loads(body)["id"]
            time.sleep(1)
            base_rss, base_threads = rss_kib(process.pid), threads(process.pid)
            started = cpu_seconds(process.pid)
            time.sleep(options.idle / 2)
            base_cpu = (cpu_seconds(process.pid) - started) / (options.idle / 2)

            streams = [open_stream(port) for _ in range(options.streams)]
            read_heads(streams)
            polls = [open_long_poll(port, newest) for _ in range(options.polls)]
            time.sleep(2)  # every long-poll is waiting
            rss, thread_count = rss_kib(process.pid), threads(process.pid)
            started = cpu_seconds(process.pid)
            time.sleep(options.idle)
            idle_cpu = (cpu_seconds(process.pid) - started) / options.idle
            rss_idle = rss_kib(process.pid)

            print(f"shutterd {options.shutterd}, test pattern 640x480 at 30 fps, nobody watching the preview, "
                  f"keep-alive every {options.keep_alive_ms} ms")
            print(f"before: RSS {base_rss / 1024:.1f} MiB, {base_threads} threads, "
                  f"CPU {base_cpu * 100:.2f}% of a core")
            print(f"with {options.streams} idle /events streams and {options.polls} idle long-polls: "
                  f"RSS {rss / 1024:.1f} MiB (+{(rss - base_rss) / 1024:.1f} MiB, "
                  f"{(rss - base_rss) * 1024 / max(1, options.streams + options.polls):.0f} bytes each), "
                  f"{thread_count} threads, CPU {idle_cpu * 100:.2f}% of a core over {options.idle:.0f} s; "
                  f"RSS after the idle period {rss_idle / 1024:.1f} MiB")

            # A snap's event to every stream: the long-polls all answer on the first one.
            selector = selectors.DefaultSelector()
            for sock in streams:
                selector.register(sock, selectors.EVENT_READ)
            delays_all, delays_last, snap_times = [], [], []
            for index in range(options.snaps):
                waiting = set(streams)
                sent = time.monotonic()
                status, body = request(port, "POST", "/snap")
                answered = time.monotonic()
                assert status == 201, body
                snap_times.append(answered - sent)
                arrivals = []
                deadline = time.monotonic() + 10
                while waiting and time.monotonic() < deadline:
                    for key, _ in selector.select(1):
                        data = key.fileobj.recv(65536)
                        if b"event: picture.created" in data and key.fileobj in waiting:
                            waiting.discard(key.fileobj)
                            arrivals.append(time.monotonic())
                if waiting:
                    print(f"snap {index}: {len(waiting)} streams got nothing")
                delays_all += [arrival - answered for arrival in arrivals]
                delays_last.append(max(arrivals) - answered)
                if index == 0:
                    answered_polls = 0
                    for sock in polls:
                        sock.settimeout(5)
                        if sock.recv(65536).startswith(b"HTTP/1.1 200"):
                            answered_polls += 1
                    print(f"first snap: {answered_polls} of {options.polls} long-polls answered")
                time.sleep(0.2)
            ms = lambda seconds: f"{seconds * 1000:.1f}"
            delays_all.sort()
            print(f"{options.snaps} snaps: snap answered in p50 {ms(statistics.median(snap_times))} ms; "
                  f"its event at the {options.streams} streams, after the snap's answer: "
                  f"p50 {ms(delays_all[len(delays_all) // 2])} ms, "
                  f"p99 {ms(delays_all[int(len(delays_all) * 0.99)])} ms, "
                  f"last stream p50 {ms(statistics.median(delays_last))} ms, max {ms(max(delays_last))} ms "
                  f"(negative: before the answer)")
            for sock in streams + polls:
                sock.close()
        finally:
            process.terminate()
            process.wait(20)


if __name__ == "__main__":
    main()
