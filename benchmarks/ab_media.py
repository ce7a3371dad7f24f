#!/usr/bin/env python3
"""Two shutterd builds side by side on GET /media/{id}.jpg: both run at once on the same
picture size, and wrk drives each in turn for several rounds, so the machine's drift falls on
both alike. Prints requests/s and CPU microseconds per request for each round.

    python3 benchmarks/ab_media.py --old /path/to/older/shutterd [--rounds 5] [-- shutterd options]

With no options after `--` the daemons run as installed (the access log on, drained here as
journald would); `-- --access-log false` measures them tuned.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(binary, data_dir, args):
    process = subprocess.Popen(
        [binary, "--listen", "127.0.0.1:0", "--data-dir", data_dir, "--size", "1920x1080", "--quality", "75", *args],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = None
    for line in process.stderr:
        match = re.search(r"listening .*address=[^ ]*:(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    return process, port


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def snap(port):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    connection.request("POST", "/snap")
    return json.loads(connection.getresponse().read())["id"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--new", default=os.path.join(ROOT, ".build/release/shutterd"))
    parser.add_argument("--old", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("args", nargs="*", help="shutterd options for both, after --")
    options = parser.parse_args()
    work = tempfile.mkdtemp(prefix="shutter-bench-ab-")
    daemons = {}
    try:
        for name in ("new", "old"):
            process, port = start(getattr(options, name), os.path.join(work, name), options.args)
            daemons[name] = (process, port, snap(port))
        results = {name: [] for name in daemons}
        for _ in range(options.rounds):
            for name, (process, port, picture) in daemons.items():
                before = cpu_seconds(process.pid)
                output = subprocess.run(
                    ["wrk", "-t2", "-c64", f"-d{options.seconds}s", f"http://127.0.0.1:{port}/media/{picture}.jpg"],
                    capture_output=True, text=True).stdout
                rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
                microseconds = (cpu_seconds(process.pid) - before) / (rps * options.seconds) * 1e6
                results[name].append({"rps": rps, "cpu_us_per_request": round(microseconds, 1)})
        for name, rounds in results.items():
            mean = sum(r["cpu_us_per_request"] for r in rounds) / len(rounds)
            print(json.dumps({"build": name, "rounds": rounds, "mean_cpu_us_per_request": round(mean, 1)}))
    finally:
        for process, _, _ in daemons.values():
            process.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
