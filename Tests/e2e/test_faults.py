"""One fault suite (issue 15): ENOSPC injected at each step of a snap, kill -9 at random moments
of every kind of work, SIGTERM during streams, long-polls and uploads, the wall clock stepping
during an interval job, and the emulated camera unplugged, stalled, its permissions taken away
(EACCES) and taken by another program (EBUSY).

The disk faults come from libdiskfull.so (Tests/FaultInjection, through faults.py), switched on
and off while the daemon runs; the kill -9 rounds are benchmarks/fault_rounds.py's, a few of them
here and 50 in the long run; the clock steps come from libfaketime."""

import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from faults import DiskFull, catalog_state
from test_snap_library import djpeg_size
from webhook_receiver import WebhookReceiver

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

ARGS = ["--size", "320x240", "--fps", "30", "--min-free-bytes", "0"]


def all_records(d):
    records, path = [], "/library?limit=500"
    while path:
        status, _, page = d.json("GET", path)
        assert status == 200, page
        records += page["items"]
        path = page["next"]
    return records


def assert_library_is(d, data_dir, expected):
    """The library lists exactly `expected` (records), each file is whole, and media/ holds
    exactly their files: no orphan, no temporary file."""
    library = sorted(all_records(d), key=lambda r: r["id"])
    assert [r["id"] for r in library] == sorted(r["id"] for r in expected)
    by_id = {r["id"]: r for r in expected}
    for record in library:
        assert record["sha256"] == by_id[record["id"]]["sha256"]
        status, _, jpeg = d.request("GET", record["url"])
        assert status == 200 and hashlib.sha256(jpeg).hexdigest() == record["sha256"], record
        assert djpeg_size(jpeg) == (record["width"], record["height"])
    names = sorted(name for name in os.listdir(Path(data_dir) / "media") if name != "thumbs")
    assert names == sorted(f"{r['id']}.jpg" for r in expected)


# Each step of a snap (MediaDirectory.store, then MediaCatalog.add's transaction) and the rules
# that make exactly it fail. `$` anchors the pattern at the end of the path: the directory itself.
SNAP_STEPS = {
    "jpeg-write": [("write", "/media/.")],
    "jpeg-fsync": [("fsync", "/media/.")],
    "rename": [("rename", "/media/.")],
    "directory-fsync": [("fsync", "/media$")],
    "sqlite-wal-write": [("pwrite", "catalog.sqlite-wal")],  # pwrite64 too
    "sqlite-wal-sync": [("fsync", "catalog.sqlite-wal"), ("fdatasync", "catalog.sqlite-wal")],
}


@pytest.mark.parametrize("step", SNAP_STEPS)
def test_enospc_at_each_step_of_a_snap_answers_507_and_loses_nothing(make_daemon, tmp_path, step):
    disk = DiskFull(tmp_path / "faults")
    data_dir = tmp_path / "data"
    d = make_daemon(ARGS, env=disk.env(), data_dir=data_dir)
    stored = [d.snap() for _ in range(2)]

    disk.fail(*SNAP_STEPS[step])
    status, _, body = d.json("POST", "/snap")
    assert status == 507, (status, body)
    assert body["error"] == "storage full" and body["detail"], body
    calls = {call for call, _ in disk.injected()}
    wanted = {call for call, _ in SNAP_STEPS[step]}
    assert calls and calls <= wanted, (disk.injected(), wanted)
    # Health says why, while the fault lasts.
    status, _, health = d.json("GET", "/healthz")
    assert status == 503 and "storage full" in health["reason"], health
    assert_library_is(d, data_dir, stored)

    # Switched off: the next snap is stored, and nothing of the failed one comes back after a
    # kill -9 and a restart (its rows or WAL frames, its file, its event).
    disk.clear()
    stored.append(d.snap())
    assert_library_is(d, data_dir, stored)
    d.stop(signal.SIGKILL)
    d.start()
    assert_library_is(d, data_dir, stored)
    created = [json.loads(data)["id"] for _, kind, data in catalog_state(data_dir)["events"]
               if kind == "picture.created"]
    assert created == [r["id"] for r in stored]
    stored.append(d.snap())
    assert_library_is(d, data_dir, stored)
    assert d.json("GET", "/healthz")[2]["status"] == "ok"


@pytest.mark.parametrize("step", ["rename", "sqlite-wal-sync"])
def test_a_kill_9_right_after_an_enospc_leaves_no_trace_of_the_failed_snap(make_daemon, tmp_path, step):
    disk = DiskFull(tmp_path / "faults")
    data_dir = tmp_path / "data"
    d = make_daemon(ARGS, env=disk.env(), data_dir=data_dir)
    stored = [d.snap() for _ in range(2)]
    disk.fail(*SNAP_STEPS[step])
    status, _, body = d.json("POST", "/snap")
    assert status == 507, body
    assert disk.injected()
    # Killed before any other write could overwrite what the failed commit left in the WAL.
    d.stop(signal.SIGKILL)
    disk.clear()
    d.start()
    assert_library_is(d, data_dir, stored)
    events = catalog_state(data_dir)["events"]
    created = [json.loads(data)["id"] for _, kind, data in events if kind == "picture.created"]
    assert created == [r["id"] for r in stored], events
    stored.append(d.snap())
    assert_library_is(d, data_dir, stored)


# ---------------------------------------------------------------------------------------------
# kill -9 at random moments: a bounded run of benchmarks/fault_rounds.py (50 rounds there).

def test_kill_9_rounds_leave_catalog_files_thumbnails_and_outbox_in_agreement(tmp_path):
    from conftest import BINARY
    from fault_rounds import run_rounds

    lines = []
    figures = run_rounds(BINARY, tmp_path, rounds=8, seed=int(os.environ.get("FAULT_ROUNDS_SEED", "15")),
                         log=lines.append)
    print("\n".join(lines))
    assert figures["rounds"] == 8 and len(lines) == 8
    # The checks had something to check: pictures, thumbnails, events delivered.
    assert figures["rows"] > 0 and figures["events"] > 0 and figures["deliveries"] > 0, figures


# ---------------------------------------------------------------------------------------------
# SIGTERM while every kind of long-lived request is open.

def holding_receiver(hold_s):
    """A webhook receiver that holds the first POST for `hold_s` (an upload in flight at the
    SIGTERM) and accepts the others at once."""
    def respond(post):
        if post.number == 1:
            time.sleep(hold_s)
        return 204
    return WebhookReceiver(respond=respond)


def read_to_the_end(sock):
    """Everything until the server's FIN; a reset instead fails the test."""
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


# A client that closes when the daemon does lets it exit at once; one that keeps its socket
# open holds the exit for the lingering close (2 s, HTTPConnectionStateMachine) at most.
SIGTERM_EXIT_BOUND_S = 1.0


def whole_parts(stream):
    """How many parts `stream` (what followed the first boundary) holds; it must end right after
    a part's closing boundary, and the last JPEG must decode."""
    count, last = 0, None
    while stream:
        head, separator, stream = stream.partition(b"\r\n\r\n")
        assert separator and head.startswith(b"Content-Type: image/jpeg"), head[:80]
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        closing = b"\r\n--shutterframe\r\n"
        assert len(stream) >= length + len(closing), "the stream ended inside a part"
        last, stream = stream[:length], stream[length:]
        assert stream.startswith(closing), stream[:40]
        stream = stream[len(closing):]
        count += 1
    if last:
        assert djpeg_size(last) == (320, 240)
    return count


def test_sigterm_during_a_stream_an_event_stream_a_long_poll_and_an_upload(make_daemon, tmp_path):
    from mjpeg import MJPEGStream
    from test_events import open_stream

    receiver = holding_receiver(hold_s=6)
    try:
        data_dir = tmp_path / "data"
        args = [*ARGS, "--webhook-url", receiver.url]
        d = make_daemon(args, data_dir=data_dir)
        d.wait_for_log("sink starts with the events from now on")
        picture = d.snap()
        assert receiver.first_post.wait(10), "the upload never started"

        preview = MJPEGStream(d.port)
        assert preview.status == 200
        preview.read_preamble()
        for _ in range(2):
            _, jpeg, _, _ = preview.next_part()
            assert djpeg_size(jpeg) == (320, 240)
        events = open_stream(d, headers={"Last-Event-ID": "0"})
        replayed = events.next_event()
        while replayed["event"] != "picture.created":
            replayed = events.next_event()
        assert replayed["data"]["id"] == picture["id"]
        long_poll = socket.create_connection(("127.0.0.1", d.port), timeout=10)
        long_poll.sendall(f"GET /library?after={picture['id']}&wait=30 HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())

        # Each client reads until the daemon's FIN and then closes, as a real one does; a reset
        # fails its reader.
        endings = {}

        def read_until_closed(name, sock, already=b""):
            try:
                endings[name] = already + read_to_the_end(sock)
            except OSError as error:
                endings[name] = error
            sock.close()

        readers = [threading.Thread(target=read_until_closed, args=args) for args in (
            ("preview", preview.sock, bytes(preview.buffer)), ("events", events.sock, events.buffer),
            ("long-poll", long_poll))]
        for reader in readers:
            reader.start()
        time.sleep(0.5)  # the long-poll waits, the upload is held, both streams are open

        started = time.monotonic()
        assert d.stop(signal.SIGTERM) == 0
        elapsed = time.monotonic() - started
        for reader in readers:
            reader.join(5)
        print(f"SIGTERM to exit: {elapsed:.3f} s")
        assert elapsed < SIGTERM_EXIT_BOUND_S, f"exit took {elapsed:.2f} s:\n" + "\n".join(d.log_lines[-12:])

        # Clean closes: a FIN after whole messages, never a reset or half a part.
        assert not [e for e in endings.values() if isinstance(e, Exception)], endings
        parts = whole_parts(endings["preview"])
        assert parts >= 1, "the preview sent nothing while the test waited"
        assert endings["events"] == b"" or endings["events"].endswith(b"\n\n"), endings["events"]
        answer = endings["long-poll"]
        assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" in answer, answer[:200]
        assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {"items": [], "next": None}
        # The upload in flight was given up, not waited for (the receiver holds it for 6 s).
        d.wait_for_log("sink failed; retrying with backoff", "CancellationError")

        # Nothing lost: the picture is whole, and the event whose upload was cut short is
        # delivered by the next daemon.
        d.start()
        assert_library_is(d, data_dir, [picture])
        deadline = time.monotonic() + 15
        # Taken by a later POST than the first, which the killed upload was (still held, or
        # answered to a daemon that was gone).
        while not any(post.number > 1 and json.loads(post.body)["id"] == replayed["id"]
                      for post in receiver.accepted_posts()):
            assert time.monotonic() < deadline, [(p.number, p.body[:200]) for p in receiver.accepted_posts()]
            time.sleep(0.05)
    finally:
        receiver.close()


# ---------------------------------------------------------------------------------------------
# The wall clock stepping (NTP) during an interval job.

def test_wall_clock_steps_leave_the_interval_alone_and_taken_at_follows_the_wall_clock(make_daemon, tmp_path):
    from faults import FAKETIME_LIB, faketime_env, step_wall_clock

    if not os.path.exists(FAKETIME_LIB):
        pytest.skip("libfaketime is not installed (scripts/test installs it)")
    offset_file = tmp_path / "faketime.rc"
    step_wall_clock(offset_file, "+0")
    env = faketime_env(offset_file)
    # Started from Python under libfaketime, shutterd has been seen to get no command-line
    # arguments (it then served shutter-data on :8080): the settings go by environment too.
    env.update({"SHUTTERD_LISTEN": "127.0.0.1:0", "SHUTTERD_DATA_DIR": str(tmp_path / "data"),
                "SHUTTERD_SIZE": "320x240", "SHUTTERD_FPS": "30"})
    d = make_daemon(["--size", "320x240", "--fps", "30"], env=env)
    assert f"data_dir={tmp_path / 'data'} " in d.wait_for_log("listening"), "the daemon ignored its settings"

    def step(offset):
        step_wall_clock(offset_file, offset)

    from test_events import open_stream
    events = open_stream(d, "/events?types=picture.created")
    every = 0.5
    status, _, job = d.json("POST", "/jobs", json.dumps({"kind": "interval", "every": every, "count": 18}))
    assert status == 201, job
    # (the test's monotonic time, taken_at in Unix seconds, the offset in force, the real time)
    arrivals = []
    offsets = [(0, 4), (3600, 5), (0, 4), (-3600, 5)]  # offset, pictures taken under it
    for offset, pictures in offsets:
        step(f"{offset:+d}")
        for _ in range(pictures):
            event = events.next_event()
            arrivals.append((time.monotonic(), parse_rfc3339(event["data"]["taken_at"]), offset, time.time()))
    events.close()

    # The interval holds on the monotonic clock: no catch-up burst after a step (gaps near 0),
    # no stall (an hour, or one missed shot's worth). Bounds wide enough for a loaded machine:
    # arrivals carry the encode, the store and the event's delivery.
    gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:])]
    assert all(0.1 <= gap <= 1.2 for gap in gaps), gaps
    assert abs(sum(gaps) / len(gaps) - every) < 0.1, gaps
    # taken_at is the (faked) wall clock at the shot: within a second of the real time plus the
    # offset, except around a step, where the shot may come from either side of it.
    for index, (_, taken_at, offset, real) in enumerate(arrivals):
        previous_offset = arrivals[index - 1][2] if index else offset
        assert any(abs(taken_at - (real + o)) < 1.5 for o in (offset, previous_offset)), (index, taken_at, real, offset)
    assert sum(1 for _, taken_at, offset, real in arrivals if offset == 3600 and taken_at - real > 3500) >= 4
    assert sum(1 for _, taken_at, offset, real in arrivals if offset == -3600 and real - taken_at > 3500) >= 4
    status, _, done = d.json("GET", f"/jobs/{job['id']}?wait=5&state_not=running")
    assert status == 200 and done["taken"] == 18 and done["missed"] == 0, done


def parse_rfc3339(text):
    from datetime import datetime, timezone
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


# ---------------------------------------------------------------------------------------------
# The camera failing under an interval job, a preview viewer and snaps (the emulated camera).

@pytest.mark.parametrize("fault", [
    {"unplug_after": 45, "unplug_seconds": 1.5},  # gone for 1.5 s, once
    {"stall_after": 45},  # frames stop after 45 of every stream, without an error
])
def test_a_failing_camera_costs_shots_not_the_job_and_stores_no_broken_picture(make_daemon, tmp_path, fault):
    from emucam import emucam_env
    from mjpeg import MJPEGStream

    data_dir = tmp_path / "data"
    d = make_daemon(["--camera", "/dev/video0", "--size", "640x480", "--fps", "30", "--warmup-ms", "100",
                     "--reopen-interval-ms", "300", "--snap-timeout-ms", "1000", "--min-free-bytes", "0"],
                    env=emucam_env(**fault), data_dir=data_dir)
    every, count = 0.25, 24
    status, _, job = d.json("POST", "/jobs", json.dumps({"kind": "interval", "every": every, "count": count}))
    assert status == 201, job
    preview = MJPEGStream(d.port, "/preview.mjpg?fps=10")
    preview.read_preamble()
    snaps, refusals, parts = [], [], 0
    deadline = time.monotonic() + count * every + 8
    while time.monotonic() < deadline:
        _, jpeg, _, _ = preview.next_part()
        assert djpeg_size(jpeg) == (640, 480)  # a camera frame or the no-signal one, never broken
        parts += 1
        if parts % 5 == 0:
            status, _, body = d.json("POST", "/snap")
            if status == 201:
                snaps.append(body)
            else:
                assert status == 503 and body["error"] == "camera unavailable", (status, body)
                refusals.append(body)
        status, _, current = d.json("GET", f"/jobs/{job['id']}")
        if current["state"] not in ("scheduled", "running"):
            break
    preview.close()
    assert current["state"] == "done", current
    # Each slot was either shot or counted missed; the camera's absence cost some, not the job.
    assert current["taken"] + current["missed"] == count, current
    assert current["missed"] >= 1 and current["taken"] >= count // 3, current
    assert current["last_failure_kind"] == "camera_unavailable", current
    assert parts >= 10 and snaps, (parts, snaps)
    d.wait_for_log("camera failed")
    d.wait_for_log("camera recovered")
    # Every picture stored is whole, the job's and the snaps', and nothing else is in media/.
    pictures = [r for r in all_records(d)]
    assert len([r for r in pictures if r["job_id"] == job["id"]]) == current["taken"]
    assert_library_is(d, data_dir, pictures)
    assert {r["id"] for r in snaps} <= {r["id"] for r in pictures}


# ---------------------------------------------------------------------------------------------
# The camera's permissions taken away (EACCES) or the camera taken by another program (EBUSY)
# while the daemon streams, then given back: no restart.

@pytest.mark.parametrize("fault, words", [("EACCES", "'video' group"), ("EBUSY", "another program")])
def test_a_camera_lost_to_permissions_or_another_program_is_taken_back_without_a_restart(
        make_daemon, tmp_path, fault, words):
    from emucam import CameraHolder, CameraPermissions, assert_camera_refused, camera_daemon, wait_for

    state_dir = tmp_path / "camera"
    permissions = CameraPermissions(state_dir)
    holder = CameraHolder(state_dir)
    data_dir = tmp_path / "data"
    # The camera unplugs once, for 2 s, after 90 frames: the daemon meets the fault when it
    # opens the camera again, as after a replug.
    d = camera_daemon(make_daemon, ["--min-free-bytes", "0"], data_dir=data_dir, unplug_after=90,
                      unplug_seconds=2, state_dir=state_dir, **permissions.knobs())
    try:
        stored = [d.snap()]
        if fault == "EACCES":
            # Taken away while it streams: the open descriptor keeps working, as on Linux.
            permissions.take_away()
            stored.append(d.snap())
            d.wait_for_log("camera failed", "disconnected")
        else:
            # Another program takes the camera while it is unplugged: the daemon has let go of it
            # (its descriptor is closed), and the holder streams from the fresh device.
            d.wait_for_log("camera failed", "disconnected")
            holder.start()
        # The daemon keeps serving and says why, however often it tries again (every 300 ms).
        assert_camera_refused(d, words)
        time.sleep(1.0)
        assert_camera_refused(d, words)
        assert_library_is(d, data_dir, stored)
        # The repeating failure is logged once, not once per attempt.
        assert len([line for line in d.log_lines if "camera failed" in line and words in line]) == 1, "\n".join(d.log_lines)

        if fault == "EACCES":
            permissions.give_back()
        else:
            holder.stop()
        wait_for(lambda: d.request("GET", "/healthz")[0] == 200, timeout=5)
        stored.append(d.snap())
        d.wait_for_log("camera recovered")
        assert d.process.poll() is None, "the same daemon, never restarted"
        _, _, status = d.json("GET", "/status")
        assert status["camera"]["state"] == "streaming" and status["camera"]["failure"] is None, status
        assert_library_is(d, data_dir, stored)
    finally:
        holder.stop()


# ---------------------------------------------------------------------------------------------
# A real disk filling up (a 2 MiB tmpfs) under a burst, then kill -9 and a restart on it.

from test_storage_limits import tiny_fs  # noqa: E402,F401 - a fixture


def test_a_disk_filling_under_a_burst_then_kill_9_and_a_restart_on_the_full_disk(tiny_fs, make_daemon):  # noqa: F811
    data_dir = tiny_fs / "data"
    args = ["--size", "640x480", "--fps", "30", "--min-free-bytes", "0"]
    d = make_daemon(args, data_dir=data_dir)
    status, _, job = d.json("POST", "/jobs", json.dumps({"kind": "burst", "count": 1000}))
    assert status == 201, job
    # Killed while the burst runs into the full disk: shots are refused, the job goes on.
    deadline = time.monotonic() + 30
    while "storage full" not in (d.json("GET", "/healthz")[2].get("reason") or ""):
        assert time.monotonic() < deadline, "the 2 MiB tmpfs never filled up"
        time.sleep(0.05)
    # The shot that found the disk full is counted missed a moment later (a loaded machine can
    # take longer than a frame or two), and the job goes on.
    while True:
        status, _, running = d.json("GET", f"/jobs/{job['id']}")
        assert running["state"] == "running", running
        if running["missed"] >= 1:
            break
        assert time.monotonic() < deadline, running
        time.sleep(0.05)
    d.stop(signal.SIGKILL)

    # The daemon starts on the full disk, and what it lists is exactly what is there, whole.
    d.start()
    d.wait_for_log("media directory checked")
    # The burst resumes (refused for space, or counting the frames it missed while down);
    # stopped, or ended by itself, so nothing changes while we look.
    d.json("DELETE", f"/jobs/{job['id']}")
    status, _, ended = d.json("GET", f"/jobs/{job['id']}?wait=10&state_not=running")
    assert ended["state"] not in ("scheduled", "running"), ended
    time.sleep(0.2)  # a shot in flight at the cancel has been stored or refused
    state = catalog_state(data_dir)
    assert set(state["rows"]) == state["files"] and not state["leftovers"], state
    pictures = all_records(d)
    assert len(pictures) >= 3
    assert_library_is(d, data_dir, pictures)
    # Deleting makes room for a snap on the full disk.
    for gone in pictures[:3]:
        assert d.request("DELETE", f"/library/{gone['id']}")[0] == 204
    status, _, record = d.json("POST", "/snap")
    assert status == 201, record
    assert_library_is(d, data_dir, pictures[3:] + [record])
