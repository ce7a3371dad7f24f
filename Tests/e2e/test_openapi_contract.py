"""The running daemon against its own OpenAPI document (GET /openapi.json), with schemathesis:
every operation, positive and negative generated cases, and the stateful links (a snap's
record to its GET, PATCH, DELETE and media; a job to its GET and DELETE). Checks: no 5xx,
statuses, content types, headers and bodies as documented, invalid input refused.

The streams (GET /preview.mjpg and GET /events) never end, so the CLI run leaves them out and
the second test checks their generated cases by their status, headers and first bytes."""

import json
import os
import re
import subprocess
import sys

import hypothesis
import jsonschema
import pytest
import requests
import schemathesis

HOOKS = os.path.join(os.path.dirname(__file__), "schemathesis_hooks.py")
CONFIG = os.path.join(os.path.dirname(__file__), "schemathesis.toml")
# The whole run's budget; fuzzing and stateful testing repeat until it is spent.
MAX_TIME_SECONDS = 90


@pytest.fixture
def contract_daemon(make_daemon):
    # Bursts and intervals a generated case schedules stay small.
    return make_daemon(["--camera", "test-pattern", "--size", "320x240", "--fps", "30", "--max-job-shots", "20"])


def test_the_daemon_keeps_its_openapi_contract(contract_daemon, tmp_path):
    d = contract_daemon
    base = f"http://127.0.0.1:{d.port}"
    # The document as served, from a file: given its URL, schemathesis would leave out the
    # operation that serves it.
    status, _, served = d.request("GET", "/openapi.json")
    assert status == 200
    (tmp_path / "openapi.json").write_bytes(served)
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", CONFIG, "run", str(tmp_path / "openapi.json"),
        "--url", base,
        "--phases", "examples,coverage,fuzzing,stateful", "--mode", "all",
        "--max-time", str(MAX_TIME_SECONDS), "--exclude-path", "/preview.mjpg", "--exclude-path", "/events", "--workers", "1",
        "--seed", "13", "--request-timeout", "15", "--generation-database", "none", "--no-color",
        "--max-failures", "20",
    ]
    env = dict(os.environ, SCHEMATHESIS_HOOKS=HOOKS)
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=MAX_TIME_SECONDS + 120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    # It ran what it should have: every operation but the streams, and links between them.
    document = json.loads(served)
    operations = sum(1 for item in document["paths"].values() for key in item if key != "parameters")
    assert f"Tested: {operations - len(STREAMS)}" in output, output[-5000:]
    links = re.search(r"API Links:\s+(\d+) covered", output)
    assert links and int(links.group(1)) >= 6, output[-5000:]
    assert d.process.poll() is None, "the daemon died"
    status, _, health = d.json("GET", "/healthz")
    assert status == 200, health


STREAMS = [
    # (path, the 200's content type, how its body starts)
    ("/preview.mjpg", "multipart/x-mixed-replace", b"--shutterframe"),
    ("/events", "text/event-stream", b"retry: 1000"),
]


@pytest.mark.parametrize("path, content_type, start", STREAMS, ids=[s[0] for s in STREAMS])
def test_the_streams_answer_as_documented(contract_daemon, path, content_type, start):
    d = contract_daemon
    base = f"http://127.0.0.1:{d.port}"
    schema = schemathesis.openapi.from_url(base + "/openapi.json")
    operation = schema[path]["GET"]
    documented = operation.definition.raw["responses"]
    seen = set()

    @hypothesis.settings(max_examples=40, deadline=None, database=None, derandomize=True,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(case=hypothesis.strategies.one_of(
        operation.as_strategy(generation_mode=schemathesis.GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=schemathesis.GenerationMode.NEGATIVE)))
    def check(case):
        with requests.get(base + path, params=case.query, headers=case.headers, stream=True,
                          timeout=10) as response:
            seen.add(response.status_code)
            assert str(response.status_code) in documented, (case.query, response.status_code)
            answered_type = response.headers["Content-Type"]
            if response.status_code == 200:
                assert answered_type.startswith(content_type), answered_type
                first = next(response.iter_content(len(start)))
                assert first.startswith(start), first
            else:
                assert answered_type == "application/json"
                body = json.loads(response.raw.read(65536))
                assert set(body) == {"error", "detail"}, body

    check()
    # A refusal of a bad parameter, asked for outright: which cases hypothesis generates is not
    # something to rely on (on a loaded machine one run generated none that were refused).
    bad = {"/preview.mjpg": {"fps": "0"}, "/events": {"types": "no.such.type"}}[path]
    with requests.get(base + path, params=bad, timeout=10) as response:
        assert response.status_code == 400 and "400" in documented, response.status_code
        assert response.headers["Content-Type"] == "application/json"
        assert set(response.json()) == {"error", "detail"}
    assert 200 in seen, seen


def _component_validator(document, name):
    return jsonschema.Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]})


def test_regression_a_job_field_given_as_null_is_taken_as_absent(contract_daemon):
    """Found by schemathesis: POST /jobs took `"label": null` (and any field null) as absent, which
    the document refused. The document now says so; what the daemon accepts, it accepts."""
    d = contract_daemon
    status, _, document = d.json("GET", "/openapi.json")
    assert status == 200
    job_spec = _component_validator(document, "JobSpec")
    accepted = [
        {"kind": "delayed", "delay": 3600, "label": None, "start_at": None},
        {"kind": "delayed", "delay": 3600, "every": None, "count": None},
        {"kind": "interval", "every": 60, "count": None, "until": None, "duration": 600},
        {"kind": "burst", "count": 2, "delay": None, "label": None},
    ]
    for body in accepted:
        assert job_spec.is_valid(body), body
        status, _, job = d.json("POST", "/jobs", json.dumps(body))
        assert status == 201, (body, job)
        assert d.json("DELETE", f"/jobs/{job['id']}")[0] == 200
    refused = [
        {"kind": "delayed", "delay": None},
        {"kind": "interval", "every": 60, "count": None},
        {"kind": "interval", "every": 60, "count": 3, "duration": 600},
        {"kind": "burst", "count": 2, "every": 1},
    ]
    for body in refused:
        assert not job_spec.is_valid(body), body
        status, _, error = d.json("POST", "/jobs", json.dumps(body))
        assert status == 400, (body, error)


def test_regression_an_overlong_query_is_refused_as_documented(contract_daemon):
    """Found by schemathesis (seed 3): a generated query past max_target_bytes is refused with 414
    before any parameter is read. The document lists 414 with the error body on every operation,
    and the contract test counts it as a rejection."""
    d = contract_daemon
    status, _, document = d.json("GET", "/openapi.json")
    assert status == 200
    assert "414" in document["paths"]["/library"]["get"]["responses"]
    status, headers, body = d.json("GET", "/library?label=" + "x" * 9000)
    assert status == 414, body
    assert headers["content-type"] == "application/json"
    assert _component_validator(document, "Error").is_valid(body), body
