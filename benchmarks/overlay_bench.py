#!/usr/bin/env python3
"""Issue 11 benchmarks at 1280x720, each side by side in one run and alternated, as ratios:

1. The YUYV path (YUYV -> planar 4:2:2 -> JPEG) with and without the burned-in text drawn
   before the encode (target: the text costs at most 5%). One process runs the three variants in
   turns of 10 frames (no text; the text drawn in place, as the capture loop does on a YUYV
   camera's lent canvas; the text drawn in the encoder's copy, the path before) and times each on
   the thread's CPU clock and the wall clock, so a neighbour's build slows all three alike; the
   median over the turns of each turn's ratio is given beside the ratio of the totals.
2. The MJPEG overlay path (decode to planar Y'CbCr, draw, encode) in frames/s against tjbench
   decompressing the same frame to YUV and compressing the picture from YUV, one after the other
   (1 / (1/decompress + 1/compress); target >= 0.9x).
3. tjTransform's lossless quarter turn of the frame (JPEGTransformer) against
   `jpegtran -rotate 90 -perfect` on the same file (target: no slower). jpegtran is a process
   per picture; its figure is given with and without the cost of starting a process (`true`).

The picture is ffmpeg's testsrc at 1280x720, the frame that picture as a 4:2:2 JPEG at quality
85 (cjpeg -sample 2x1), like a UVC camera's. CPU per delivered frame at 100 viewers with the text
on the preview is preview_bench.py with --shutterd-args (see README.md).

Usage: benchmarks/overlay_bench.py [--seconds 5] [--repeat 2] [--yuyv-only] [--json FILE]
Needs: swift build -c release --product shutter-encode-bench, ffmpeg, libjpeg-turbo-progs.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENCODE_BENCH = os.path.join(ROOT, ".build/release/shutter-encode-bench")
TEXT = "%Y-%m-%d %H:%M:%S.%f {camera} #{frame}"


def bench(*args):
    out = subprocess.run([ENCODE_BENCH, *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def tjbench(path, *args, cwd):
    return subprocess.run(["tjbench", path, *args], capture_output=True, text=True, check=True, cwd=cwd).stdout


def write_json(path, results):
    """Prints the results, and writes them to `path` too when given."""
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=2)
    json.dump(results, sys.stdout, indent=2)
    print()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--yuyv-only", action="store_true", help="only the YUYV overlay's cost")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    load_before = os.getloadavg()
    seconds = str(args.seconds)
    work = tempfile.mkdtemp(prefix="shutter-overlay-bench-")
    picture, frame = os.path.join(work, "picture.ppm"), os.path.join(work, "frame.jpg")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=1280x720",
                    "-frames:v", "1", picture], check=True)
    with open(frame, "wb") as f:
        f.write(subprocess.run(["cjpeg", "-quality", "85", "-sample", "2x1", picture], capture_output=True,
                               check=True).stdout)

    pairs, mjpeg, decomp, comp, turn = [], [], [], [], []
    for _ in range(args.repeat):
        pairs.append(bench(picture, "85", seconds, "--overlay-pairs", TEXT))
        if args.yuyv_only:
            continue
        mjpeg.append(bench(picture, "85", seconds, "--mjpeg-overlay", frame, TEXT)["fps"])
        out = tjbench(frame, "-yuv", "-benchtime", seconds, "-warmup", "1", cwd=work)
        decomp.append(float(re.search(r"Decomp to YUV --> Frame rate:\s+([\d.]+)", out).group(1)))
        out = tjbench(picture, "85", "-subsamp", "422", "-yuv", "-benchtime", seconds, "-warmup", "1", cwd=work)
        comp.append(float(re.search(r"Comp from YUV --> Frame rate:\s+([\d.]+)", out).group(1)))
        turn.append(bench(picture, "85", seconds, "--transform", frame, "90")["ms_per_frame"])

    mean = lambda values: sum(values) / len(values)  # noqa: E731
    variants = ("plain", "in_place", "encoders_copy")
    yuyv = {"load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    for clock in ("cpu_ms_per_frame", "wall_ms_per_frame"):
        runs = [{v: round(run[clock][v], 3) for v in variants} for run in pairs]
        cost = lambda v: [round(r[v] / r["plain"] - 1, 3) for r in runs]  # noqa: E731
        yuyv[clock] = {"runs": runs, "text_in_place_cost": cost("in_place"),
                       "text_in_encoders_copy_cost": cost("encoders_copy"),
                       "mean_text_in_place_cost": round(mean(cost("in_place")), 3),
                       "mean_text_in_encoders_copy_cost": round(mean(cost("encoders_copy")), 3)}
    yuyv["median_turn_cpu_cost"] = {v: [round(run["median_turn_cpu_cost"][v], 3) for run in pairs]
                                    for v in ("in_place", "encoders_copy")}
    yuyv["jpeg_bytes"] = pairs[-1]["jpeg_bytes"]
    yuyv["frames_each_per_run"] = [run["frames_each"] for run in pairs]
    if args.yuyv_only:
        subprocess.run(["rm", "-rf", work])
        write_json(args.json, {"yuyv": yuyv})
        return

    runs = 30
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["jpegtran", "-rotate", "90", "-perfect", "-outfile", os.path.join(work, "turned.jpg"),
                        frame], check=True)
    jpegtran_ms = (time.perf_counter() - start) * 1000 / runs
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(["true"], check=True)
    spawn_ms = (time.perf_counter() - start) * 1000 / runs
    subprocess.run(["rm", "-rf", work])

    tj_pair = 1 / (1 / mean(decomp) + 1 / mean(comp))
    results = {
        "yuyv": yuyv,
        "mjpeg_overlay": {"fps": round(mean(mjpeg), 1), "tjbench_decompress_then_compress_fps": round(tj_pair, 1),
                          "ratio": round(mean(mjpeg) / tj_pair, 3),
                          "runs": {"ours": mjpeg, "tjbench_decomp_yuv": decomp, "tjbench_comp_yuv": comp}},
        "rotate90": {"tjtransform_ms": round(mean(turn), 2), "jpegtran_ms": round(jpegtran_ms, 2),
                     "jpegtran_ms_without_process_start": round(jpegtran_ms - spawn_ms, 2),
                     "speedup_vs_jpegtran_without_start": round((jpegtran_ms - spawn_ms) / mean(turn), 2)},
    }
    write_json(args.json, results)


if __name__ == "__main__":
    main()
