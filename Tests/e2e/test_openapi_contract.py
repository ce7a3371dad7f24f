"""The running daemon against its own OpenAPI document (GET /openapi.json), with schemathesis:
every operation, positive and negative generated cases, and the stateful links (a snap's
record to its GET, PATCH, DELETE and media; a job to its GET and DELETE). Checks: no 5xx,
statuses, content types, headers and bodies as documented, invalid input refused.

The stream (GET /preview.mjpg) never ends, so the CLI run leaves it out and the second test
checks its generated cases by their status and headers alone."""

import json
import os
import subprocess
import sys

import hypothesis
import pytest
import requests
import schemathesis

HOOKS = os.path.join(os.path.dirname(__file__), "schemathesis_hooks.py")
CHECKS = ",".join([
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "use_after_free",
    "ensure_resource_availability",
])
# The whole run's budget; fuzzing and stateful testing repeat until it is spent.
MAX_TIME_SECONDS = 90


@pytest.fixture
def contract_daemon(make_daemon):
    # Bursts and intervals a generated case schedules stay small.
    return make_daemon(["--camera", "test-pattern", "--size", "320x240", "--fps", "30", "--max-job-shots", "20"])


def test_the_daemon_keeps_its_openapi_contract(contract_daemon, tmp_path):
    d = contract_daemon
    base = f"http://127.0.0.1:{d.port}"
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", base + "/openapi.json", "--url", base,
        "--checks", CHECKS, "--phases", "examples,coverage,fuzzing,stateful", "--mode", "all",
        "--max-time", str(MAX_TIME_SECONDS), "--exclude-path", "/preview.mjpg", "--workers", "1",
        "--seed", "13", "--request-timeout", "15", "--generation-database", "none", "--no-color",
        "--max-failures", "20",
    ]
    env = dict(os.environ, SCHEMATHESIS_HOOKS=HOOKS)
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=MAX_TIME_SECONDS + 120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # It ran what it should have: every operation but the stream, and the links between them.
    assert "/preview.mjpg" not in output or "Skipped" in output
    for operation in ["POST /snap", "GET /library/{id}", "DELETE /jobs/{id}", "GET /openapi.json"]:
        assert operation in output, output[-5000:]
    assert d.process.poll() is None, "the daemon died"
    status, _, health = d.json("GET", "/healthz")
    assert status == 200, health


def test_the_stream_answers_as_documented(contract_daemon):
    d = contract_daemon
    base = f"http://127.0.0.1:{d.port}"
    schema = schemathesis.openapi.from_url(base + "/openapi.json")
    operation = schema["/preview.mjpg"]["GET"]
    documented = operation.definition.raw["responses"]
    seen = set()

    @hypothesis.settings(max_examples=40, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(case=operation.as_strategy())
    def check(case):
        with requests.get(base + "/preview.mjpg", params=case.query, headers=case.headers, stream=True,
                          timeout=10) as response:
            seen.add(response.status_code)
            assert str(response.status_code) in documented, (case.query, response.status_code)
            content_type = response.headers["Content-Type"]
            if response.status_code == 200:
                assert content_type.startswith("multipart/x-mixed-replace"), content_type
                first = next(response.iter_content(64))
                assert first.startswith(b"--shutterframe"), first
            else:
                assert content_type == "application/json"
                body = json.loads(response.raw.read(65536))
                assert set(body) == {"error", "detail"}, body

    check()
    assert 200 in seen
