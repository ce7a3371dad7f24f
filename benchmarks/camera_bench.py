#!/usr/bin/env python3
"""Issue 3 benchmarks, side by side in one run, on the emulated UVC camera at 1280x720, 30 fps.

1. CPU seconds per frame, shutterd against ustreamer (Debian package), for MJPEG passthrough
   and for YUYV encoded on the CPU. ustreamer encodes every captured frame whether or not
   anyone watches; shutterd encodes only frames someone waits for, so it is measured twice:
   idle (nobody asks: the cost of capture alone), busy (a client fetching
   /preview.jpg?fresh=true in a loop, so nearly every frame is encoded and served once, a
   request per frame) and streaming (one viewer of /preview.mjpg, like for like with ustreamer's
   one viewer of its /stream); ustreamer is measured alone and with one viewer of its /stream.
   CPU per frame is per captured frame on both sides when streaming (ustreamer's captured_fps,
   our frames_captured), per frame served when polling. With --rounds N the four measurements
   of a format are taken N times, alternating ours and theirs, and the ratios of each round kept.
2. The unthrottled YUYV encode rate (benchmarks/EncodeBenchmark: YUYV -> planar 4:2:2 -> JPEG)
   against tjbench compressing planar YUV 4:2:2, on the same 1280x720 picture.

Usage: benchmarks/camera_bench.py [--seconds 10] [--encode-seconds 5] [--rounds 1] [--formats mjpeg,yuyv]
       [--no-encode-rate] [--json FILE]
Needs: swift build -c release (shutterd, shutter-encode-bench), ustreamer and libjpeg-turbo-progs.
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "e2e"))
from emucam import emucam_env  # noqa: E402

SHUTTERD = os.path.join(ROOT, ".build/release/shutterd")
ENCODE_BENCH = os.path.join(ROOT, ".build/release/shutter-encode-bench")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def poll_preview(port, stop):
    """One keep-alive connection asking for each new frame, as a viewer would."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    while not stop.is_set():
        conn.request("GET", "/preview.jpg?fresh=true")
        conn.getresponse().read()
    conn.close()


def measure_shutterd(fmt, seconds, busy, stream=False):
    """shutterd's CPU: busy polls stills, stream has one /preview.mjpg viewer, neither is idle."""
    port = free_port()
    data = tempfile.mkdtemp(prefix="shutter-bench-cam-")
    process = subprocess.Popen(
        [SHUTTERD, "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--camera", "/dev/video0",
         "--size", "1280x720", "--fps", "30", "--quality", "85", "--camera-formats", fmt, "--access-log", "false"],
        env=emucam_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                get_json(f"http://127.0.0.1:{port}/healthz")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        time.sleep(1.5)  # past warm-up
        stop = threading.Event()
        if stream:
            poller = threading.Thread(target=read_stream, args=(port, stop, "/preview.mjpg"))
        else:
            poller = threading.Thread(target=poll_preview, args=(port, stop))
        if busy or stream:
            poller.start()
            time.sleep(1)
        before = get_json(f"http://127.0.0.1:{port}/status")["camera"]
        cpu0 = cpu_seconds(process.pid)
        time.sleep(seconds)
        cpu = cpu_seconds(process.pid) - cpu0
        after = get_json(f"http://127.0.0.1:{port}/status")["camera"]
        stop.set()
        if busy or stream:
            poller.join()
        captured = after["frames_captured"] - before["frames_captured"]
        encoded = after["frames_encoded"] - before["frames_encoded"]
        frames = encoded if busy and not stream else captured
        return {"cpu_s": round(cpu, 3), "frames_captured": captured, "frames_served": encoded,
                "cpu_ms_per_frame": round(1000 * cpu / max(frames, 1), 3),
                "core_percent": round(100 * cpu / seconds, 1)}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)
        subprocess.run(["rm", "-rf", data])


def read_stream(port, stop, path="/stream"):
    """A viewer of an MJPEG stream (ustreamer's /stream, our /preview.mjpg), reading every byte as it comes."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", path)
    response = conn.getresponse()
    while not stop.is_set():
        if not response.read1(65536):
            break
    conn.close()


def measure_ustreamer(fmt, seconds, busy=False):
    port = free_port()
    encoder = "HW" if fmt == "MJPEG" else "CPU"
    process = subprocess.Popen(
        ["ustreamer", "--device=/dev/video0", f"--format={fmt}", "--resolution=1280x720", "--desired-fps=30",
         f"--encoder={encoder}", "--quality=85", "--host=127.0.0.1", f"--port={port}"],
        env=emucam_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                state = get_json(f"http://127.0.0.1:{port}/state")
                if state["result"]["source"]["online"]:
                    break
            except (OSError, KeyError):
                pass
            if time.monotonic() > deadline:
                raise SystemExit("ustreamer did not come online")
            time.sleep(0.1)
        time.sleep(1.5)
        stop = threading.Event()
        viewer = threading.Thread(target=read_stream, args=(port, stop))
        if busy:
            viewer.start()
            time.sleep(1)
        cpu0 = cpu_seconds(process.pid)
        t0 = time.monotonic()
        fps = []
        while time.monotonic() - t0 < seconds:
            time.sleep(1)
            fps.append(get_json(f"http://127.0.0.1:{port}/state")["result"]["source"]["captured_fps"])
        cpu = cpu_seconds(process.pid) - cpu0
        stop.set()
        if busy:
            viewer.join()
        frames = sum(fps)
        return {"cpu_s": round(cpu, 3), "frames": frames, "cpu_ms_per_frame": round(1000 * cpu / max(frames, 1), 3),
                "core_percent": round(100 * cpu / seconds, 1), "encoder": encoder}
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)


def encode_rates(seconds):
    work = tempfile.mkdtemp(prefix="shutter-bench-enc-")
    port = free_port()
    data = os.path.join(work, "data")
    process = subprocess.Popen(
        [SHUTTERD, "--listen", f"127.0.0.1:{port}", "--data-dir", data, "--camera", "test-pattern",
         "--size", "1280x720", "--quality", "95"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/preview.jpg", timeout=5) as r:
                    jpeg = r.read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)
    picture = os.path.join(work, "picture.ppm")
    with open(picture, "wb") as f:
        f.write(subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True, check=True).stdout)
    ours, theirs = [], []
    for _ in range(2):  # alternate, so drift on a noisy machine hits both
        out = subprocess.run([ENCODE_BENCH, picture, "85", str(seconds)], capture_output=True, text=True, check=True)
        ours.append(json.loads(out.stdout.strip().splitlines()[-1])["fps"])
        out = subprocess.run(["tjbench", picture, "85", "-subsamp", "422", "-yuv", "-benchtime", str(seconds),
                              "-warmup", "1"], capture_output=True, text=True, check=True, cwd=work)
        theirs.append(float(re.search(r"Comp from YUV --> Frame rate:\s+([\d.]+)", out.stdout).group(1)))
    subprocess.run(["rm", "-rf", work])
    return {"shutterd_yuyv_fps": round(sum(ours) / 2, 1), "tjbench_planar422_fps": round(sum(theirs) / 2, 1),
            "ratio": round(sum(ours) / sum(theirs), 3), "runs": {"shutterd": ours, "tjbench": theirs}}


def main():
    global SHUTTERD
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--shutterd", default=SHUTTERD,
                        help="the daemon to measure (default: this checkout's release build), e.g. an older build to compare")
    parser.add_argument("--encode-seconds", type=float, default=5, help="each run of the encode rate comparison")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of each format's measurements, alternated")
    parser.add_argument("--formats", default="mjpeg,yuyv", help="comma-separated: mjpeg, yuyv")
    parser.add_argument("--no-encode-rate", action="store_true", help="skip the encode rate comparison")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    SHUTTERD = args.shutterd
    results = {"camera": "emulated UVC, 1280x720, 30 fps", "load_average_before": os.getloadavg()}
    for fmt, ours in (("MJPEG", "mjpeg"), ("YUYV", "yuyv")):
        if ours not in args.formats.split(","):
            continue
        rounds = []
        for index in range(args.rounds):
            # Alternated: theirs first in even rounds, ours first in odd ones.
            steps = [("ustreamer", lambda: measure_ustreamer(fmt, args.seconds)),
                     ("ustreamer_streaming", lambda: measure_ustreamer(fmt, args.seconds, busy=True)),
                     ("shutterd_streaming", lambda: measure_shutterd(ours, args.seconds, busy=False, stream=True)),
                     ("shutterd_busy", lambda: measure_shutterd(ours, args.seconds, busy=True)),
                     ("shutterd_idle", lambda: measure_shutterd(ours, args.seconds, busy=False))]
            if index % 2:
                steps = steps[2:] + steps[:2]
            measured = {name: step() for name, step in steps}
            measured["load_average_after"] = os.getloadavg()
            rounds.append(measured)
        per_frame = lambda name: sum(r[name]["cpu_ms_per_frame"] for r in rounds) / len(rounds)  # noqa: E731
        last = rounds[-1]
        results[ours] = {
            "ustreamer": last["ustreamer"], "ustreamer_streaming": last["ustreamer_streaming"],
            "shutterd_busy": last["shutterd_busy"], "shutterd_idle": last["shutterd_idle"],
            "shutterd_streaming": last["shutterd_streaming"],
            "mean_cpu_ms_per_frame": {name: round(per_frame(name), 3) for name in
                                      ("ustreamer", "ustreamer_streaming", "shutterd_streaming", "shutterd_busy",
                                       "shutterd_idle")},
            "busy_vs_ustreamer_idle": round(per_frame("shutterd_busy") / per_frame("ustreamer"), 3),
            "busy_vs_ustreamer_streaming": round(per_frame("shutterd_busy") / per_frame("ustreamer_streaming"), 3),
            "streaming_vs_ustreamer_streaming": round(
                per_frame("shutterd_streaming") / per_frame("ustreamer_streaming"), 3),
            "streaming_vs_ustreamer_streaming_rounds": [
                round(r["shutterd_streaming"]["cpu_ms_per_frame"] / r["ustreamer_streaming"]["cpu_ms_per_frame"], 3)
                for r in rounds],
            "rounds": rounds,
        }
        if args.rounds == 1:
            del results[ours]["rounds"]
    if not args.no_encode_rate:
        results["encode_rate"] = encode_rates(args.encode_seconds)
    results["load_average_after"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    json.dump(results, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
