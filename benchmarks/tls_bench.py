#!/usr/bin/env python3
"""HTTPS benchmark, side by side in one run (ratios, because these machines are noisy).

GET /media/{id}.jpg of a ~200 KB picture over HTTPS: shutterd against nginx serving the same
file with the same certificate (one EC P-256 certificate made here by openssl), the same
protocols (TLS 1.2 and 1.3) and OpenSSL's default ciphers on both sides (both negotiate
TLS_AES_256_GCM_SHA384 with wrk), 1 nginx worker with sendfile and `ssl_conf_command Options
KTLS`; wrk with 64 keep-alive connections on loopback. Whether each server's records were sent
by the kernel (kTLS) is read from /proc/net/tls_stat (present only with the kernel's `tls`
module), and shutterd also logs it (`tls ktls_send=...`).

Usage: benchmarks/tls_bench.py [--duration 10] [--rounds 1] [--binary .build/release/shutterd] [--json FILE]
--rounds R (R > 1) alternates R rounds, shutterd first in even ones and nginx first in odd ones,
and reports each round's ratio; the default runs shutterd, nginx, shutterd again.
Needs: wrk, nginx-light, openssl (Debian: apt-get install wrk nginx-light openssl); builds
nothing itself (run `swift build -c release --product shutterd` first). Tries `modprobe tls`
first, where allowed, so kTLS can be measured; works without it.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import cpu_seconds, free_port, stop, wait_listening, wrk  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_certificate(work):
    cert, key = os.path.join(work, "bench.crt"), os.path.join(work, "bench.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def try_loading_ktls():
    """Loads the kernel's TLS module where this machine allows it; says whether it is there."""
    if not os.path.exists("/proc/net/tls_stat") and shutil.which("modprobe"):
        subprocess.run(["modprobe", "tls"], capture_output=True)
    return os.path.exists("/proc/net/tls_stat")


def tls_stat():
    """The kernel's TLS counters (TlsTxSw: connections whose records the kernel encrypted)."""
    try:
        with open("/proc/net/tls_stat") as f:
            return {name: int(value) for name, value in (line.split() for line in f if line.strip())}
    except OSError:
        return {}


def kernel_sent_for(before, after):
    """Whether connections opened between two readings used kernel TLS for sending."""
    if not after:
        return False
    return after.get("TlsTxSw", 0) + after.get("TlsTxDevice", 0) > before.get("TlsTxSw", 0) + before.get(
        "TlsTxDevice", 0)


def start_https_daemon(binary, data_dir, cert, key, args):
    process = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--access-log", "false",
         "--tls-cert", cert, "--tls-key", key, *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = []
    for raw in process.stderr:
        log.append(raw.decode("utf-8", "replace"))
        match = re.search(rb"listening .*address=[^ ]*:(\d+)", raw)
        if match:
            def drain():
                for line in process.stderr:
                    log.append(line.decode("utf-8", "replace"))
            threading.Thread(target=drain, daemon=True).start()
            return process, int(match.group(1)), log
    raise SystemExit("shutterd did not start:\n" + "".join(log))


def post_snap_https(port, cert):
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30,
                                       context=ssl.create_default_context(cafile=cert))
    conn.request("POST", "/snap")
    response = conn.getresponse()
    body = response.read()
    conn.close()
    assert response.status == 201, body
    return json.loads(body)


def negotiated(port, cert):
    """The protocol and cipher a default client gets, to show both servers agree."""
    context = ssl.create_default_context(cafile=cert)
    with context.wrap_socket(__import__("socket").create_connection(("127.0.0.1", port)),
                             server_hostname="127.0.0.1") as sock:
        return f"{sock.version()} {sock.cipher()[0]}"


def media_vs_nginx(binary, duration, rounds=1):
    work = tempfile.mkdtemp(prefix="shutter-bench-tls-")
    cert, key = make_certificate(work)
    ktls_module = try_loading_ktls()
    # 1920x1080 at quality 75 makes a test-pattern JPEG of about 200 KB.
    daemon, port, log = start_https_daemon(binary, os.path.join(work, "data"), cert, key,
                                           ["--size", "1920x1080", "--quality", "75"])
    nginx = None
    try:
        record = post_snap_https(port, cert)
        path = os.path.join(work, "data", "media", f"{record['id']}.jpg")
        www = os.path.join(work, "www")
        os.makedirs(www)
        shutil.copy(path, os.path.join(www, "picture.jpg"))
        nginx_port = free_port()
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""
user root;
worker_processes 1;
daemon off;
error_log {work}/nginx-error.log;
pid {work}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 60;
    types {{ image/jpeg jpg; }}
    server {{
        listen 127.0.0.1:{nginx_port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_conf_command Options KTLS;
        root {www};
        etag on;
    }}
}}
""")
        nginx = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        wait_listening(nginx_port, nginx)
        ours_url = f"https://127.0.0.1:{port}/media/{record['id']}.jpg"
        theirs_url = f"https://127.0.0.1:{nginx_port}/picture.jpg"
        agreed = {"shutterd": negotiated(port, cert), "nginx": negotiated(nginx_port, cert)}
        stat0 = tls_stat()
        wrk(ours_url, 64, 2)  # warm up both
        stat1 = tls_stat()
        wrk(theirs_url, 64, 2)
        stat2 = tls_stat()
        workers = subprocess.run(["pgrep", "-P", str(nginx.pid)], capture_output=True, text=True).stdout.split()

        def measure(side):
            """One wrk run against one side, with that server's CPU seconds during it."""
            pids = [daemon.pid] if side == "shutterd" else [int(pid) for pid in workers]
            cpu0 = sum(cpu_seconds(pid) for pid in pids)
            result = wrk(ours_url if side == "shutterd" else theirs_url, 64, duration)
            result["cpu_s"] = round(sum(cpu_seconds(pid) for pid in pids) - cpu0, 2)
            result["cpu_ms_per_request"] = round(result["cpu_s"] * 1000 / (result["rps"] * duration), 3)
            return result

        # One round: shutterd, nginx, shutterd again (the drift shows in ours' two figures). More:
        # alternated, shutterd first in even rounds and nginx first in odd ones.
        runs = {"shutterd": [], "nginx": []}
        if rounds <= 1:
            for side in ("shutterd", "nginx", "shutterd"):
                runs[side].append(measure(side))
        else:
            for i in range(rounds):
                for side in (("shutterd", "nginx") if i % 2 == 0 else ("nginx", "shutterd")):
                    runs[side].append(measure(side))
        logged = next((line.strip() for line in log if " tls " in line and "ktls_send=" in line), None)
        mean = lambda values: sum(values) / len(values)  # noqa: E731
        ours_rps = [r["rps"] for r in runs["shutterd"]]
        theirs_rps = [r["rps"] for r in runs["nginx"]]
        results = {
            "bytes": record["bytes"], "negotiated": agreed,
            "kernel_tls_module": ktls_module,
            "ktls_send": {"shutterd": kernel_sent_for(stat0, stat1), "nginx": kernel_sent_for(stat1, stat2)},
            "shutterd_log": logged,
            "shutterd": runs["shutterd"][0], "nginx": runs["nginx"][0], "shutterd_again": runs["shutterd"][-1],
            "ratio": round(mean(ours_rps) / mean(theirs_rps), 3),
        }
        if rounds > 1:
            results["rounds"] = {"shutterd_rps": ours_rps, "nginx_rps": theirs_rps,
                                 "ratios": [round(o / t, 3) for o, t in zip(ours_rps, theirs_rps)]}
        return results
    finally:
        if nginx:
            nginx.send_signal(signal.SIGQUIT)
            nginx.wait(10)
        stop(daemon)
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1,
                        help="alternated rounds (shutterd first, then nginx first, ...); 1: shutterd, nginx, "
                             "shutterd again")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/shutterd"))
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    results = {"machine": {"cores": os.cpu_count(), "kernel": os.uname().release,
                           "openssl": ssl.OPENSSL_VERSION}}
    results["https_media_vs_nginx"] = media_vs_nginx(args.binary, args.duration, args.rounds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
