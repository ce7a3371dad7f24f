"""Log lines as operators read them: JSON a line with --log-format json, request ids that match
the response's X-Request-Id, and journald priorities only when stderr is the journal."""

import json
import time


def test_json_logs_are_one_object_a_line_with_the_request_id_of_the_response(make_daemon):
    d = make_daemon(["--log-format", "json", "--size", "320x240"])
    status, headers, _ = d.request("POST", "/snap")
    assert status == 201
    request_id = headers["x-request-id"]
    deadline = time.monotonic() + 5
    while not any('"msg":"request"' in line and '"POST"' in line for line in d.log_lines):
        assert time.monotonic() < deadline, d.log_lines
        time.sleep(0.02)
    records = [json.loads(line) for line in d.log_lines]  # every line parses
    for record in records:
        assert {"ts", "level", "label", "msg"} <= record.keys(), record
    access = [r for r in records if r["msg"] == "request" and r["method"] == "POST"]
    assert access[0]["request_id"] == request_id
    assert access[0]["status"] == "201" and access[0]["target"] == "/snap"
    assert any(r["msg"] == "listening" and r["level"] == "notice" for r in records)


def test_text_logs_have_no_priority_prefix_outside_the_journal(make_daemon):
    d = make_daemon(["--size", "320x240"], env={"JOURNAL_STREAM": "1:1"})
    assert all(not line.startswith("<") for line in d.log_lines)
    assert any(" notice shutterd: listening " in line for line in d.log_lines)


def test_under_the_journal_each_line_starts_with_its_priority(tmp_path):
    """stderr is the stream systemd names in JOURNAL_STREAM (its device and inode): here a pipe
    the test makes and names the same way."""
    import os
    import signal
    import subprocess
    from conftest import BINARY
    read_end, write_end = os.pipe()
    info = os.fstat(write_end)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHUTTERD_")}
    env["JOURNAL_STREAM"] = f"{info.st_dev}:{info.st_ino}"
    process = subprocess.Popen([BINARY, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                                "--size", "320x240", "--camera", "/dev/nonexistent-video9"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=write_end, env=env)
    os.close(write_end)
    lines = []
    with os.fdopen(read_end) as stream:
        for line in stream:
            lines.append(line.rstrip("\n"))
            if "listening" in line:
                break
        process.send_signal(signal.SIGTERM)
        # What was written after "listening" (the camera's failure may be) is read to the end.
        lines.extend(line.rstrip("\n") for line in stream)
        process.wait(20)
    assert any(line.startswith("<5>") and "listening" in line for line in lines), lines
    assert any(line.startswith("<3>") and "camera failed" in line for line in lines), lines
    assert all(line[:1] == "<" and line[2:3] == ">" for line in lines), lines


def test_a_request_id_follows_the_request_into_the_catalogs_log_lines(make_daemon):
    d = make_daemon(["--log-format", "json", "--size", "320x240", "--retention-max-pictures", "1",
                     "--retention-min-age-s", "0"])
    assert d.request("POST", "/snap", headers={"X-Request-Id": "trace-1"})[1]["x-request-id"] == "trace-1"
    status, headers, _ = d.request("POST", "/snap", headers={"X-Request-Id": "trace-2"})
    assert status == 201 and headers["x-request-id"] == "trace-2"
    deadline = time.monotonic() + 5
    while True:
        records = [json.loads(line) for line in d.log_lines]
        removed = [r for r in records if r["msg"] == "retention removed pictures"]
        if removed or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # The catalog's thread logged it, on the second snap's behalf.
    assert removed and removed[0]["request_id"] == "trace-2", records
    assert removed[0]["component"] == "catalog"


def test_a_stderr_nobody_reads_holds_no_answer_and_every_line_is_written_or_counted(tmp_path):
    """stderr is a pipe the test stops reading once the daemon listens, as a wedged journald or a
    stopped `| less` would. Every request is still answered at once; when the pipe is read again,
    each access line is either there or counted in a "log lines dropped" line."""
    import http.client
    import os
    import re
    import select
    import signal
    import subprocess
    import time
    from conftest import BINARY
    read_end, write_end = os.pipe()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHUTTERD_")}
    process = subprocess.Popen([BINARY, "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "d"),
                                "--size", "320x240", "--camera", "test-pattern"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=write_end, env=env)
    os.close(write_end)
    received = b""
    try:
        while b"listening" not in received:
            assert select.select([read_end], [], [], 20)[0], "shutterd did not start"
            received += os.read(read_end, 65536)
        port = int(re.search(rb"listening .*address=[^ ]*:(\d+)", received).group(1))
        # 4 KB targets: 600 lines are 2.4 MB, more than the pipe (64 KiB) and the daemon's queue
        # (1 MiB) hold together.
        padding = "x" * 4000
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        started = time.monotonic()
        for n in range(600):
            connection.request("GET", f"/nothing/{n}/{padding}")
            response = connection.getresponse()
            response.read()
            assert response.status == 404
        assert time.monotonic() - started < 30
        # Read again, and once the queue has drained make one more request, so that a batch is
        # taken after the last drop.
        deadline = time.monotonic() + 20
        last_sent = False
        while time.monotonic() < deadline:
            if select.select([read_end], [], [], 0.2)[0]:
                received += os.read(read_end, 1 << 20)
            elif not last_sent:
                connection.request("GET", "/nothing/last")
                connection.getresponse().read()
                last_sent = True
            text = received.decode()
            written = len(re.findall(r" request .*target=/nothing/\d+/x{4000}", text))
            dropped = sum(int(n) for n in re.findall(r"log lines dropped: stderr was not read dropped=(\d+)", text))
            if "target=/nothing/last" in text and written + dropped == 600:
                break
        assert dropped > 0, "the queue cannot have held 2.4 MB"
        assert written > 0
        assert written + dropped == 600, (written, dropped)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(20)
        os.close(read_end)
