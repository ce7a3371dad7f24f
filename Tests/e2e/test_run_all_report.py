"""benchmarks/run-all's report (issue 15), without measuring: the table it renders from raw numbers.

The full run takes 21 minutes and is a script, not a CI step; what it prints is checked here, from
the raw numbers of the run at the top of benchmarks/README.md and from made-up ones whose ratios are
known, so a change to a script's JSON or to the renderer cannot silently empty or skew the table."""

import copy
import glob
import importlib.machinery
import importlib.util
import json
import os
import re
import subprocess
import sys

_ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
_SCRIPT = os.path.join(_ROOT, "benchmarks", "run-all")
_loader = importlib.machinery.SourceFileLoader("run_all", _SCRIPT)
_spec = importlib.util.spec_from_loader("run_all", _loader)
run_all = importlib.util.module_from_spec(_spec)
_loader.exec_module(run_all)


def latest_raw():
    """The newest complete run kept in benchmarks/results (the one benchmarks/README.md quotes):
    the default plan with every step, not a `--only` run of some of them."""
    runs = sorted(glob.glob(os.path.join(_ROOT, "benchmarks", "results", "run-all-*.json")))

    def complete(path):
        with open(path) as f:
            raw = json.load(f)
        return raw["mode"] == "full" and set(raw["steps"]) == set(run_all.SCRIPTS)

    full = [path for path in runs if complete(path)]
    assert full, "no complete run-all kept in benchmarks/results"
    with open(full[-1]) as f:
        return full[-1], json.load(f)


def test_the_kept_run_renders_every_step_with_no_failure_and_the_ratio_of_every_peer():
    path, raw = latest_raw()
    out = subprocess.run([sys.executable, _SCRIPT, "--render", path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    report = out.stdout
    assert "failed" not in report, report
    rows = [line for line in report.splitlines() if line.startswith("| ") and not line.startswith("| what")]
    # Every peer the issue names has its row: ustreamer, nginx (plain and TLS), tjbench, jpegtran, mosquitto.
    for needle in ("fan-out, 1 viewer", "fan-out, 100 viewers: peak RSS", "installed binary", "MJPEG passed through",
                   "YUYV 1280x720 to JPEG", "over HTTP, both writing access logs", "over HTTPS",
                   "`304`", "still of the live camera", "mosquitto_sub", "MJPEG frame decode", "jpegtran"):
        assert any(needle in row for row in rows), f"no row for {needle!r}:\n{report}"
    # Each row has a ratio or says why not, and the load during its step.
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 7, row
        assert re.fullmatch(r"(\*\*\d+\.\d\d\*\*( \(rounds \d\.\d\d–\d\.\d\d\))?|—)", cells[3]), row
        assert re.fullmatch(r"\d+\.\d → \d+\.\d", cells[6]), row
    # The machine is described.
    assert re.search(r"Machine: .*\d+ cores, .* GiB, Linux ", report), report
    # Rendering again gives the same table the run wrote beside its JSON.
    with open(path[:-len(".json")] + ".md") as f:
        assert f.read().strip() == report.strip()


def preview_result(server, viewers, cpu_ms, frames=600):
    return {"server": server, "viewers": viewers, "frames": frames, "cpu_s": cpu_ms * frames / 1000,
            "cpu_ms_per_frame": cpu_ms, "fps": {"min": 30.0}, "latency_ms": {"p50": 2.0}, "hwm_mib": 20.0}


def test_the_fan_out_rows_show_each_alternated_rounds_ratio():
    # Two rounds at one viewer: ours 0.3 then 0.4 ms a frame, ustreamer 0.5 both times.
    results = {"results": [preview_result("ustreamer", 1, 0.5), preview_result("shutterd", 1, 0.3),
                           preview_result("shutterd", 1, 0.4), preview_result("ustreamer", 1, 0.5)]}
    table = run_all.Table()
    run_all.preview_rows(table, results)
    row = table.rows[0]
    assert row["ratio"] == 0.7  # pooled: 0.35 / 0.5
    assert row["rounds"] == [0.6, 0.8]
    assert "**0.70** (rounds 0.60–0.80)" in row["markdown"]
    assert row["markdown"].endswith("≤ 0.8 (issue 5): met |")


def test_the_overlay_row_shows_each_rounds_ratio_against_that_rounds_tjbench():
    # tjbench at 300 fps to decompress and 300 to compress is 150 a frame for both.
    results = {"mjpeg_overlay": {"fps": 120.0, "tjbench_decompress_then_compress_fps": 150.0,
                                 "runs": {"ours": [105.0, 135.0], "tjbench_decomp_yuv": [300.0, 300.0],
                                          "tjbench_comp_yuv": [300.0, 300.0]}}}
    table = run_all.Table()
    run_all.overlay_rows(table, results)
    row = table.rows[0]
    assert row["ratio"] == 0.8
    assert [round(r, 2) for r in row["rounds"]] == [0.7, 0.9]
    assert "(rounds 0.70–0.90)" in row["markdown"] and "**not met**" in row["markdown"]


def test_a_failed_step_leaves_its_row_saying_so_and_the_rest_of_the_table():
    _, raw = latest_raw()
    broken = copy.deepcopy(raw)
    broken["steps"]["media"]["results"] = None
    broken["steps"]["media"]["error"] = "Traceback ...\nFileNotFoundError: [Errno 2] No such file or directory: 'nginx'"
    report, table, failures = run_all.render(broken)
    assert failures == ["media"]
    assert "| stored JPEG over HTTP against nginx | http_bench.py failed: `FileNotFoundError: [Errno 2] No such file" \
        in report
    assert any("fan-out, 1 viewer" in row["markdown"] for row in table.rows)
    assert any("jpegtran" in row["markdown"] for row in table.rows)


def test_the_https_row_takes_the_alternated_rounds_when_tls_bench_ran_them():
    tls = {"bytes": 204000, "negotiated": {"shutterd": "TLSv1.3 TLS_AES_256_GCM_SHA384"},
           "ktls_send": {"shutterd": False, "nginx": False},
           "shutterd": {"rps": 4000.0}, "nginx": {"rps": 5000.0}, "shutterd_again": {"rps": 4400.0}, "ratio": 0.84,
           "rounds": {"shutterd_rps": [4000.0, 4400.0], "nginx_rps": [5000.0, 5000.0], "ratios": [0.8, 0.88]}}
    table = run_all.Table()
    run_all.media_tls_rows(table, {"https_media_vs_nginx": tls})
    row = table.rows[0]
    assert (row["ours"], row["theirs"], row["ratio"]) == (4200.0, 5000.0, 0.84)
    assert "(rounds 0.80–0.88)" in row["markdown"] and "no kTLS" in row["markdown"]
    # Without rounds (shutterd, nginx, shutterd again), as the kept runs before --rounds.
    del tls["rounds"]
    table = run_all.Table()
    run_all.media_tls_rows(table, {"https_media_vs_nginx": tls})
    assert (table.rows[0]["ours"], table.rows[0]["rounds"]) == (4200.0, None)
