"""GET /preview.mjpg: the live MJPEG stream, read by raw-socket clients that check its framing."""

import json
import selectors
import socket
import subprocess
import time

import pytest

from emucam import camera_daemon, emucam_env, wait_for
from mjpeg import MJPEGStream
from test_snap_library import djpeg_size
from test_v4l2_camera import camera_frames

TEST_PATTERN = ["--camera", "test-pattern", "--size", "640x480", "--fps", "30"]


def status(d):
    return d.json("GET", "/status")[2]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_the_stream_is_multipart_jpeg_with_advancing_frames(make_daemon):
    d = make_daemon(TEST_PATTERN)
    stream = MJPEGStream(d.port)
    try:
        assert stream.status == 200
        assert stream.headers["content-type"] == "multipart/x-mixed-replace;boundary=shutterframe"
        assert "no-store" in stream.headers["cache-control"]
        assert "content-length" not in stream.headers, "a stream has no length"
        assert stream.headers["connection"] == "close"
        stream.read_preamble()
        sequences = []
        for index in range(20):
            headers, body, _, _ = stream.next_part()
            assert headers["content-type"] == "image/jpeg"
            assert body[:2] == b"\xff\xd8" and body[-2:] == b"\xff\xd9"
            sequences.append(int(headers["x-frame-sequence"]))
            assert abs(float(headers["x-timestamp"]) - time.time()) < 5
            if index in (0, 19):
                assert djpeg_size(body) == (640, 480), "a real decoder opens each part"
        # Every frame once, in order: no repeats, and no frame skipped by a viewer that keeps up.
        assert sequences == sorted(set(sequences))
        assert sequences[-1] - sequences[0] <= 19 + 3, sequences
    finally:
        stream.close()


def test_the_boundary_follows_each_frame_at_once(make_daemon):
    # At 2 fps the next frame is 500 ms away: a boundary sent with it would arrive that late.
    d = make_daemon(TEST_PATTERN)
    stream = MJPEGStream(d.port, "/preview.mjpg?fps=2")
    try:
        stream.read_preamble()
        stream.next_part()
        for _ in range(3):
            _, _, body_at, boundary_at = stream.next_part()
            assert boundary_at - body_at < 0.1, boundary_at - body_at
    finally:
        stream.close()


def test_fps_caps_a_viewer_and_width_makes_a_smaller_rendition(make_daemon):
    d = make_daemon(["--camera", "test-pattern", "--size", "1280x720", "--fps", "30"])
    capped = MJPEGStream(d.port, "/preview.mjpg?fps=5")
    small = MJPEGStream(d.port, "/preview.mjpg?width=320")
    try:
        capped.read_preamble()
        small.read_preamble()
        capped.next_part()
        start = time.monotonic()
        for _ in range(10):
            capped.next_part()
        elapsed = time.monotonic() - start
        assert 1.6 < elapsed < 2.6, f"10 frames at 5 fps took {elapsed:.2f} s"
        # 1280 / 4: TurboJPEG's scaled decode, then one encode shared by every viewer of that size.
        for _ in range(3):
            headers, body, _, _ = small.next_part()
            assert djpeg_size(body) == (320, 180)
            assert int(headers["content-length"]) == len(body)
        viewers = {v["id"]: v for v in status(d)["preview"]["viewer_list"]}
        pairs = {(v["width"], v["max_fps"]) for v in viewers.values()}
        assert pairs == {(320, None), (None, 5.0)}, pairs
    finally:
        capped.close()
        small.close()


@pytest.mark.parametrize("query, detail", [
    ("fps=0", "fps must be a number from 0.1 to 120.0"),
    ("fps=fast", "fps must be a number"),
    ("width=8", "width must be a whole number from 16 to 4096"),
    ("size=2", "unknown query parameter 'size'"),
])
def test_bad_options_get_a_400_that_says_why(make_daemon, query, detail):
    d = make_daemon(TEST_PATTERN)
    code, headers, body = d.json("GET", f"/preview.mjpg?{query}")
    assert code == 400 and headers["content-type"] == "application/json"
    assert detail in body["detail"], body


def test_head_answers_without_becoming_a_viewer(make_daemon):
    d = make_daemon(TEST_PATTERN)
    raw = d.raw(b"HEAD /preview.mjpg HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 200 OK\r\n") and raw.endswith(b"\r\n\r\n")
    assert b"multipart/x-mixed-replace" in raw
    assert status(d)["preview"]["viewers"] == 0


def test_status_counts_viewers_and_forgets_those_who_leave(make_daemon):
    d = make_daemon(TEST_PATTERN)
    streams = [MJPEGStream(d.port) for _ in range(3)]
    try:
        for stream in streams:
            stream.read_preamble()
            for _ in range(5):
                stream.next_part()
        current = status(d)
        preview = current["preview"]
        assert preview["viewers"] == 3
        assert all(v["frames_sent"] >= 5 for v in preview["viewer_list"])
        assert preview["frames_sent"] >= 15
        # Each frame is encoded once for all three viewers, not once per viewer.
        camera = current["camera"]
        assert 0 < camera["frames_encoded"] <= camera["frames_captured"], camera
    finally:
        for stream in streams:
            stream.close()
    wait_for(lambda: status(d)["preview"]["viewers"] == 0, timeout=3)
    assert status(d)["preview"]["frames_sent"] >= 15, "totals keep the viewers that left"
    # Each viewer's arrival and departure is logged, with what it was sent.
    wait_for(lambda: len([l for l in d.log_lines if "preview viewer left" in l]) == 3, timeout=3)
    assert len([l for l in d.log_lines if "preview viewer joined" in l]) == 3
    left = [l for l in d.log_lines if "preview viewer left" in l]
    assert len(left) == 3 and all("frames_sent=" in l and "seconds=" in l for l in left), left
    # With nobody watching, nothing more is encoded.
    time.sleep(0.2)
    encoded = status(d)["camera"]["frames_encoded"]
    time.sleep(0.5)
    assert status(d)["camera"]["frames_encoded"] == encoded


class FastViewers:
    """Many viewers on one selector, reading as fast as they can and counting whole parts."""

    def __init__(self, port, count, path="/preview.mjpg"):
        self.selector = selectors.DefaultSelector()
        self.viewers = []
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            sock.setblocking(False)
            viewer = {"sock": sock, "buffer": bytearray(), "head": False, "need": None, "frames": 0,
                      "closed": False}
            self.viewers.append(viewer)
            self.selector.register(sock, selectors.EVENT_READ, viewer)

    def run(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for key, _ in self.selector.select(0.05):
                self._read(key.data)

    def _read(self, viewer):
        try:
            chunk = viewer["sock"].recv(1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            viewer["closed"] = True
            self.selector.unregister(viewer["sock"])
            return
        buffer = viewer["buffer"]
        buffer += chunk
        while True:
            if not viewer["head"]:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                assert buffer.startswith(b"HTTP/1.1 200 OK")
                del buffer[:end + 4]
                viewer["head"] = True
            if viewer["need"] is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                headers = bytes(buffer[:end]).lower()
                length = int(headers.split(b"content-length:")[1].split(b"\r\n")[0])
                del buffer[:end + 4]
                viewer["need"] = length
            if len(buffer) < viewer["need"]:
                return
            del buffer[:viewer["need"]]
            viewer["need"] = None
            viewer["frames"] += 1

    def frames(self):
        return [v["frames"] for v in self.viewers]

    def close(self):
        for viewer in self.viewers:
            viewer["sock"].close()


def test_fifty_fast_viewers_keep_the_frame_rate_and_a_stalled_one_is_dropped(make_daemon):
    d = make_daemon([*TEST_PATTERN, "--preview-stall-timeout-ms", "1000"])
    # The stalled viewer: a tiny receive window, and it never reads.
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", d.port))
    stalled.sendall(b"GET /preview.mjpg HTTP/1.1\r\nHost: localhost\r\n\r\n")
    viewers = FastViewers(d.port, 50)
    try:
        viewers.run(1.5)  # warm-up
        rss_start = rss_kib(d.process.pid)
        captured_start = status(d)["camera"]["frames_captured"]
        frames_start = viewers.frames()
        viewers.run(4.0)
        captured = status(d)["camera"]["frames_captured"] - captured_start
        delivered = [after - before for before, after in zip(frames_start, viewers.frames())]
        assert captured >= 100, f"the camera itself ran at {captured / 4:.1f} fps"
        # Every fast viewer keeps up with the camera (a frame or two of slack for the windows).
        assert min(delivered) >= captured * 0.9 - 2, (captured, sorted(delivered)[:5])
        # The stalled viewer is dropped once its socket has been full for a second.
        wait_for(lambda: (viewers.run(0.2), status(d)["preview"]["viewers"] == 50)[1], timeout=20)
        assert not any(v["closed"] for v in viewers.viewers), "fast viewers are never dropped"
        d.wait_for_log("client stopped reading")
        # Memory stays bounded: the stalled viewer held at most a frame in flight and one waiting.
        viewers.run(2.0)
        rss_end = rss_kib(d.process.pid)
        assert rss_end - rss_start < 8 * 1024, (rss_start, rss_end)
        preview = status(d)["preview"]
        assert preview["viewers"] == 50
        assert sum(v["frames_skipped"] for v in preview["viewer_list"]) <= preview["frames_sent"] * 0.1
    finally:
        viewers.close()
        stalled.close()


def test_no_signal_frames_while_the_camera_is_gone_then_the_stream_resumes(make_daemon):
    d = make_daemon(["--camera", "/dev/video0", "--size", "640x480", "--fps", "30", "--warmup-ms", "0",
                     "--reopen-interval-ms", "300"],
                    env=emucam_env(unplug_after=45, unplug_seconds=3))
    stream = MJPEGStream(d.port, timeout=5)
    try:
        stream.read_preamble()
        phases = []  # "live" or "no-signal", one entry per change
        no_signal_times = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            headers, body, arrived, _ = stream.next_part()
            phase = "no-signal" if headers["x-frame-sequence"] == "0" else "live"
            if phase == "no-signal":
                no_signal_times.append(arrived)
                assert djpeg_size(body) == (640, 480)
            if not phases or phases[-1] != phase:
                phases.append(phase)
            if phases == ["live", "no-signal", "live"]:
                break
        assert phases == ["live", "no-signal", "live"], phases
        # About one "no signal" picture a second while the camera is gone for 3 s.
        assert 2 <= len(no_signal_times) <= 6, no_signal_times
        gaps = [b - a for a, b in zip(no_signal_times, no_signal_times[1:])]
        assert all(gap < 1.5 for gap in gaps), gaps
    finally:
        stream.close()


def test_curl_reads_the_stream(make_daemon, tmp_path):
    d = make_daemon(TEST_PATTERN)
    out = tmp_path / "stream.bin"
    subprocess.run(["curl", "-s", "--max-time", "1.5", "-o", str(out), f"http://127.0.0.1:{d.port}/preview.mjpg"])
    data = out.read_bytes()
    assert data.startswith(b"--shutterframe\r\nContent-Type: image/jpeg\r\n")
    assert data.count(b"\r\n--shutterframe\r\n") >= 20


def test_an_mjpeg_camera_is_streamed_byte_for_byte(make_daemon, tmp_path):
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon)
    stream = MJPEGStream(d.port)
    try:
        stream.read_preamble()
        for _ in range(10):
            _, body, _, _ = stream.next_part()
            assert body in sent, "passthrough: each part is one of the camera's frames, untouched"
        assert status(d)["camera"]["format"] == "mjpeg"
    finally:
        stream.close()


def test_browsers_get_the_next_parts_headers_right_after_each_frame(make_daemon):
    # What Chromium needs to show a frame when it arrives rather than with the next one.
    d = make_daemon(TEST_PATTERN)
    separator = b"\r\n--shutterframe\r\nContent-Type: image/jpeg\r\n\r\n"
    with socket.create_connection(("127.0.0.1", d.port), timeout=5) as sock:
        sock.sendall(b"GET /preview.mjpg?fps=2 HTTP/1.1\r\nHost: localhost\r\nSec-Fetch-Dest: image\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, data = data.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 200 OK") and b"multipart/x-mixed-replace" in head
        while len(data) < 48:
            data += sock.recv(65536)
        assert data.startswith(b"--shutterframe\r\nContent-Type: image/jpeg\r\n\r\n")
        data = data[len(b"--shutterframe\r\nContent-Type: image/jpeg\r\n\r\n"):]
        frames = []
        arrived = time.monotonic()
        while len(frames) < 3:
            while separator in data:
                body, data = data.split(separator, 1)
                frames.append((body, arrived))
            data += sock.recv(65536)
            arrived = time.monotonic()
        for body, _ in frames:
            assert b"Content-Length" not in body[:64]
            assert djpeg_size(body) == (640, 480), "each part is exactly one JPEG"
        # Frames 500 ms apart, each complete with the next part's headers as it arrives.
        gaps = [b - a for (_, a), (_, b) in zip(frames, frames[1:])]
        assert all(0.3 < gap < 0.8 for gap in gaps), gaps
    # Asked for explicitly otherwise, a browser gets Content-Length like everyone else.
    stream = MJPEGStream(d.port, "/preview.mjpg?advance_headers=false")
    try:
        stream.read_preamble()
        headers, body, _, _ = stream.next_part()
        assert int(headers["content-length"]) == len(body)
    finally:
        stream.close()


def test_a_slow_viewer_gets_recent_frames_not_a_growing_backlog(make_daemon):
    # A viewer on a slow link: a small receive window, and it takes 0.3 s per frame where the
    # camera makes one every 33 ms. Without a cap on the kernel's unsent bytes the daemon's send
    # buffer (megabytes) would queue frames, and each frame read would be older than the last.
    d = make_daemon(["--camera", "test-pattern", "--size", "1280x720", "--fps", "30"])
    stream = MJPEGStream(d.port, receive_buffer=65536)
    try:
        stream.read_preamble()
        ages, sequences = [], []
        for _ in range(14):
            headers, _, _, _ = stream.next_part()
            ages.append(time.time() - float(headers["x-timestamp"]))
            sequences.append(int(headers["x-frame-sequence"]))
            time.sleep(0.3)
        assert max(ages[-5:]) < 1.2, [round(age, 2) for age in ages]
        assert sequences[-1] - sequences[0] > 13 * 5, "it skipped ahead to newer frames"
        viewer = status(d)["preview"]["viewer_list"][0]
        assert viewer["frames_skipped"] > 0, viewer
    finally:
        stream.close()


def test_a_viewer_wakes_an_idle_camera_and_keeps_it_open(make_daemon):
    d = camera_daemon(make_daemon, ["--idle-after-s", "1"])
    wait_for(lambda: status(d)["camera"]["state"] == "idle", timeout=10)
    stream = MJPEGStream(d.port)
    try:
        stream.read_preamble()
        headers, body, _, _ = stream.next_part()
        assert djpeg_size(body) == (640, 480)
        # Watching is demand: the camera stays open well past idle_after_s.
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            stream.next_part()
        assert status(d)["camera"]["state"] == "streaming"
    finally:
        stream.close()
    wait_for(lambda: status(d)["camera"]["state"] == "idle", timeout=10)


def test_sigterm_ends_streams_and_the_daemon_promptly(make_daemon):
    d = make_daemon(TEST_PATTERN)
    streams = [MJPEGStream(d.port) for _ in range(3)]
    for stream in streams:
        stream.read_preamble()
        stream.next_part()
    started = time.monotonic()
    assert d.stop() == 0
    assert time.monotonic() - started < 3, "streams have no end to wait for"
    for stream in streams:
        with pytest.raises((EOFError, ConnectionError)):
            for _ in range(100):
                stream.next_part()
        stream.close()


def test_each_smaller_size_is_encoded_once_for_all_its_viewers(make_daemon):
    d = make_daemon(["--camera", "test-pattern", "--size", "1280x720", "--fps", "30"])
    # 320, 300 and 200 all map onto the 1/4 scale (320 wide, the smallest n/8 at least as wide);
    # 640 is the 1/2 scale.
    paths = ["/preview.mjpg?width=320", "/preview.mjpg?width=300", "/preview.mjpg?width=200",
             "/preview.mjpg?width=640"]
    streams = [MJPEGStream(d.port, path) for path in paths]
    try:
        for stream in streams:
            stream.read_preamble()
        for _ in range(15):
            bodies = [stream.next_part()[1] for stream in streams]
        assert [djpeg_size(body) for body in bodies] == [(320, 180)] * 3 + [(640, 360)]
        preview = status(d)["preview"]
        renditions = {r["width"]: r["frames_encoded"] for r in preview["renditions"]}
        assert sorted(renditions) == [320, 640], preview["renditions"]
        sent = {}
        for viewer in preview["viewer_list"]:
            sent.setdefault(viewer["width"], []).append(viewer["frames_sent"])
        assert sorted(len(v) for v in sent.values()) == [1, 3]
        # Once per frame for the three viewers of 320, not once per viewer.
        assert renditions[320] <= max(sent[320]) + 5, (renditions, sent)
    finally:
        for stream in streams:
            stream.close()
    wait_for(lambda: status(d)["preview"]["renditions"] == [], timeout=3)
