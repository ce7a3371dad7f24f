"""GET /metrics over the real binary: the Prometheus text format as prometheus_client's parser
and promtool read it, with counters that move when they should and labels that stay bounded."""

import shutil
import subprocess

import pytest
from prometheus_client.parser import text_string_to_metric_families


def scrape(daemon):
    status, headers, body = daemon.request("GET", "/metrics")
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    return body.decode()


def samples(text):
    """{(name, frozenset(labels)): value} of every sample."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found, name, **labels):
    return found[(name, frozenset(labels.items()))]


def test_counters_move_when_they_should(daemon):
    before = samples(scrape(daemon))
    assert value(before, "shutterd_snaps_total", result="stored") == 0
    build = [(dict(labels), v) for (name, labels), v in before.items() if name == "shutterd_build_info"]
    assert len(build) == 1 and build[0][1] == 1 and build[0][0]["version"]
    records = [daemon.snap() for _ in range(2)]
    assert daemon.request("GET", records[0]["url"])[0] == 200
    assert daemon.request("GET", "/nowhere/at/all/1")[0] == 404
    assert daemon.request("BREW", "/coffee")[0] in (405, 501, 404)
    assert daemon.request("POST", "/snap?delay=abc")[0] == 400
    after = samples(scrape(daemon))
    assert value(after, "shutterd_snaps_total", result="stored") == 2
    assert value(after, "shutterd_snaps_total", result="refused") == 1
    assert value(after, "shutterd_pictures") == 2
    assert value(after, "shutterd_library_bytes", kind="pictures") == sum(r["bytes"] for r in records)
    assert value(after, "shutterd_http_requests_total", method="POST", route="/snap", code="2xx") == 2
    assert value(after, "shutterd_http_requests_total", method="GET", route="/media/{id}.jpg", code="2xx") == 1
    assert value(after, "shutterd_http_request_duration_seconds_count", method="POST", route="/snap") >= 2
    assert value(after, "shutterd_frames_captured_total") > value(before, "shutterd_frames_captured_total")
    assert value(after, "shutterd_frame_encode_seconds_count") >= 2
    assert value(after, "shutterd_camera_up", camera="test-pattern") == 1
    assert value(after, "shutterd_disk_free_bytes") > 0
    # Never a raw path as a label: unknown paths and methods are "unmatched" and "other".
    routes = {dict(labels).get("route") for (name, labels) in after if name == "shutterd_http_requests_total"}
    assert "/nowhere/at/all/1" not in routes and "unmatched" in routes
    methods = {dict(labels).get("method") for (name, labels) in after if name == "shutterd_http_requests_total"}
    assert "BREW" not in methods


def test_jobs_by_state(daemon):
    status, _, job = daemon.json("POST", "/jobs", body='{"kind": "delayed", "delay": 3600}')
    assert status == 201, job
    found = samples(scrape(daemon))
    assert value(found, "shutterd_jobs", state="scheduled") == 1
    daemon.request("DELETE", f"/jobs/{job['id']}")
    found = samples(scrape(daemon))
    assert value(found, "shutterd_jobs", state="cancelled") == 1
    assert value(found, "shutterd_jobs", state="scheduled") == 0


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian prometheus) is not installed")
def test_promtool_accepts_the_output(daemon):
    daemon.snap()
    daemon.request("GET", "/library")
    result = subprocess.run(["promtool", "check", "metrics"], input=scrape(daemon), capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "" and result.stderr.strip() == "", result.stdout + result.stderr
