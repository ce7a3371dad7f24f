"""The real shutterd binary capturing from the emulated UVC camera (Tests/EmulatedCamera): the
V4L2 path end to end, with the same code that runs on a real webcam."""

import os
import re
import subprocess
import time

import pytest

from emucam import assert_camera_refused, camera_daemon, emucam_env, wait_for
from test_snap_library import djpeg_size

SOI, EOI, DHT = b"\xff\xd8", b"\xff\xd9", b"\xff\xc4"


def camera_frames(tmp_path, count=40, **knobs):
    """Raw MJPEG frames as the emulated camera sends them, captured with v4l2-ctl."""
    out = tmp_path / "frames.raw"
    subprocess.run(["v4l2-ctl", "-d", "/dev/video0", "--set-fmt-video=width=640,height=480,pixelformat=MJPG",
                    "--stream-mmap", f"--stream-count={count}", f"--stream-to={out}"],
                   env=emucam_env(**knobs), check=True, capture_output=True, timeout=30)
    data = out.read_bytes()
    frames = [SOI + part.split(EOI)[0] + EOI for part in data.split(SOI)[1:]]
    assert len(frames) == count
    return set(frames)


def strip_dht(jpeg: bytes) -> bytes:
    """The JPEG without its DHT segments (what a UVC camera that omits them sends)."""
    out, i = bytearray(jpeg[:2]), 2
    while i < len(jpeg):
        marker = jpeg[i:i + 2]
        if marker == b"\xff\xda":
            out += jpeg[i:]
            break
        length = int.from_bytes(jpeg[i + 2:i + 4], "big")
        if marker != DHT:
            out += jpeg[i:i + 2 + length]
        i += 2 + length
    return bytes(out)


def without_exif(jpeg: bytes) -> bytes:
    """The JPEG without the EXIF APP1 segment Shutter puts right after SOI in every stored picture."""
    assert jpeg[:4] == b"\xff\xd8\xff\xe1" and jpeg[6:12] == b"Exif\0\0", "EXIF right after SOI"
    length = int.from_bytes(jpeg[4:6], "big")
    return jpeg[:2] + jpeg[4 + length:]


def test_mjpeg_is_stored_as_the_camera_sent_it(make_daemon, tmp_path):
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon)
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["format"] == "mjpeg"
    assert status["camera"]["name"] == "Emulated UVC Camera"
    assert status["camera"]["device"] == "/dev/video0"
    record = d.snap()
    _, _, jpeg = d.request("GET", record["url"])
    assert without_exif(jpeg) in sent, "passthrough: the camera's frame byte for byte, after the EXIF block"
    assert djpeg_size(jpeg) == (640, 480)


def test_mjpeg_without_huffman_tables_gets_the_standard_ones(make_daemon, tmp_path):
    sent = camera_frames(tmp_path, mjpeg_no_dht=True)
    assert all(DHT not in frame for frame in sent)
    d = camera_daemon(make_daemon, mjpeg_no_dht=True)
    record = d.snap()
    _, _, jpeg = d.request("GET", record["url"])
    assert DHT in jpeg
    assert strip_dht(without_exif(jpeg)) in sent, "the camera's bytes plus the tables and EXIF, nothing else"
    assert djpeg_size(jpeg) == (640, 480)


def test_corrupt_frames_are_dropped_and_counted(make_daemon):
    d = camera_daemon(make_daemon, corrupt_every=3)
    for _ in range(5):
        record = d.snap()
        _, _, jpeg = d.request("GET", record["url"])
        assert jpeg.endswith(EOI) and djpeg_size(jpeg) == (640, 480)
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["corrupt_frames"] > 0


def assert_colour_bars(jpeg):
    """The emulated camera's picture: 75% colour bars (white, yellow, cyan, green, magenta, red,
    blue, black) in full range, sampled near the bottom, away from the band moving down."""
    assert djpeg_size(jpeg) == (640, 480)
    ppm = subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True, check=True).stdout
    pixels = ppm.split(b"\n", 3)[3]

    def rgb(x, y):
        i = (y * 640 + x) * 3
        return tuple(pixels[i:i + 3])

    expected = [(191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0), (191, 0, 191), (191, 0, 0),
                (0, 0, 191), (0, 0, 0)]
    samples = [rgb(40 + 80 * bar, 470) for bar in range(8)]
    for got, want in zip(samples, expected):
        assert all(abs(g - w) <= 24 for g, w in zip(got, want)), (samples, expected)


def test_yuyv_is_encoded_and_looks_like_the_camera_picture(make_daemon, tmp_path):
    d = camera_daemon(make_daemon, ["--camera-formats", "yuyv"])
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["format"] == "yuyv"
    assert_colour_bars(d.request("GET", d.snap()["url"])[2])


def test_rgb24_is_converted_by_libv4lconvert_and_looks_like_the_camera_picture(make_daemon):
    # No format Shutter reads itself: libv4lconvert turns RGB24 into YU12 for the encoder. Its
    # ioctls must reach the emulated camera through glibc, or it would not find the format.
    d = camera_daemon(make_daemon, formats="rgb24")
    # The snap comes first: the format is known once the camera has opened, which the daemon
    # does on its capture thread after it starts listening.
    picture = d.request("GET", d.snap()["url"])[2]
    _, _, status = d.json("GET", "/status")
    assert "rgb24" in status["camera"]["format"] and "libv4lconvert" in status["camera"]["format"]
    assert_colour_bars(picture)


def test_format_falls_back_when_the_preferred_one_is_missing(make_daemon):
    d = camera_daemon(make_daemon, formats="yuyv")  # mjpeg is first in camera_formats
    picture = d.request("GET", d.snap()["url"])[2]
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["format"] == "yuyv"
    assert djpeg_size(picture) == (640, 480)


def test_controls_can_be_read_and_set(make_daemon):
    d = camera_daemon(make_daemon)
    status, _, body = d.json("GET", "/camera/controls")
    assert status == 200
    controls = {c["name"]: c for c in body["controls"]}
    brightness = controls["brightness"]
    assert (brightness["minimum"], brightness["maximum"], brightness["default_value"]) == (-64, 64, 0)
    status, _, body = d.json("PATCH", "/camera/controls", body=b'{"brightness": 10}')
    assert status == 200
    assert {c["name"]: c for c in body["controls"]}["brightness"]["value"] == 10
    assert {c["name"]: c for c in d.json("GET", "/camera/controls")[2]["controls"]}["brightness"]["value"] == 10
    status, _, body = d.json("PATCH", "/camera/controls", body=b'{"brightness": 1000}')
    assert status == 400 and "brightness" in body["detail"] and "64" in body["detail"]
    status, _, body = d.json("PATCH", "/camera/controls", body=b'{"sharpness_of_wit": 1}')
    assert status == 400 and "sharpness_of_wit" in body["detail"]


def test_cameras_lists_the_device_in_use(make_daemon):
    d = camera_daemon(make_daemon)
    status, _, listing = d.json("GET", "/cameras")
    assert status == 200 and listing["in_use"] == "/dev/video0"
    camera = next(c for c in listing["cameras"] if c["path"] == "/dev/video0")
    assert camera["in_use"] is True and camera["driver"] == "uvcvideo"
    formats = {f["fourcc"]: f for f in camera["formats"]}
    assert {"MJPG", "YUYV"} <= set(formats)
    assert {(s["width"], s["height"]) for s in formats["YUYV"]["sizes"]} >= {(640, 480), (1280, 720), (1920, 1080)}


def test_auto_finds_the_camera(make_daemon):
    d = make_daemon(["--size", "640x480"], env=emucam_env())
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["device"] == "/dev/video0"
    d.wait_for_log("using the first V4L2 capture device")


def test_unplug_and_return(make_daemon):
    d = camera_daemon(make_daemon, unplug_after=60, unplug_seconds=2)
    assert d.snap()
    # The camera vanishes after about two seconds of frames; HTTP keeps being served.
    health = wait_for(lambda: (lambda h: h if h[0] == 503 else None)(d.json("GET", "/healthz")))
    assert health[2]["status"] == "degraded" and health[2]["reason"]
    status, headers, body = d.json("POST", "/snap")
    assert status == 503 and body["error"] == "camera unavailable" and headers["retry-after"]
    status, _, jpeg = d.request("GET", "/preview.jpg")
    assert status == 200 and djpeg_size(jpeg) == (640, 480), "the no-signal frame"
    assert d.request("GET", "/library")[0] == 200
    gone = time.monotonic()
    # It returns after two seconds; snaps work again within two seconds of that.
    wait_for(lambda: d.request("GET", "/healthz")[0] == 200, timeout=10)
    back = time.monotonic()
    assert back - gone < 2 + 2 + 0.5, back - gone
    assert d.snap()
    _, _, status = d.json("GET", "/status")
    assert status["camera"]["reopens"] >= 1
    # Logged once each, not once per retry.
    d.wait_for_log("camera recovered")
    assert len([l for l in d.log_lines if "camera failed" in l]) <= 2
    assert len([l for l in d.log_lines if "camera recovered" in l]) == 1


def test_a_stalled_camera_is_reopened(make_daemon):
    d = camera_daemon(make_daemon, stall_after=40)
    # It stalls after 40 frames of every stream, so it keeps failing and being reopened:
    # catch it while frames flow again and snap then.
    wait_for(lambda: d.json("GET", "/status")[2]["camera"]["reopens"] >= 1, timeout=15)
    d.wait_for_log("camera failed", "stall")
    wait_for(lambda: d.request("GET", "/healthz")[0] == 200, timeout=15, step=0.02)
    assert d.json("POST", "/snap")[0] == 201


@pytest.mark.parametrize("error, words", [("EACCES", "'video' group"), ("EBUSY", "another program")])
def test_open_errors_say_what_to_do(make_daemon, error, words):
    d = camera_daemon(make_daemon, open_error=error)
    assert_camera_refused(d, words)


def test_an_idle_camera_is_closed_and_warms_up_again_for_the_next_snap(make_daemon):
    d = camera_daemon(make_daemon, ["--idle-after-s", "1"])
    wait_for(lambda: d.json("GET", "/status")[2]["camera"]["state"] == "idle", timeout=10)
    _, _, before = d.json("GET", "/status")
    assert d.request("GET", "/healthz")[0] == 200, "idle is not a failure"
    time.sleep(0.5)
    assert d.json("GET", "/status")[2]["camera"]["frames_captured"] == before["camera"]["frames_captured"]
    record = d.snap()
    assert djpeg_size(d.request("GET", record["url"])[2]) == (640, 480)
    _, _, after = d.json("GET", "/status")
    # Reopened with its warm-up: the first picture after idle is not a dark first frame.
    assert after["camera"]["warmup_frames_dropped"] > before["camera"]["warmup_frames_dropped"]
    assert after["camera"]["state"] == "streaming"


def test_a_still_between_requests_is_the_newest_frame_in_hand(make_daemon):
    # Nobody waits for a frame between these requests, yet the camera's JPEGs are kept as they
    # arrive: a still asked for between frames is the frame already received (delivered before
    # the request was sent), not the next one waited for. The emulated camera stamps each frame
    # with the wall-clock time of its delivery.
    d = camera_daemon(make_daemon, stamp=True)
    _, headers, _ = d.request("GET", "/preview.jpg?fresh=true")
    previous = int(headers["x-frame-sequence"])
    in_hand = 0
    for _ in range(10):
        time.sleep(0.05)  # a frame and a half at 30 fps: the frame the last request had is stale
        sent = time.time_ns()
        status, headers, jpeg = d.request("GET", "/preview.jpg")
        assert status == 200
        sequence = int(headers["x-frame-sequence"])
        assert sequence > previous, "a frame nobody waited for, newer than the last one served"
        previous = sequence
        delivered = int(re.search(rb"emucam-t=(\d+)", jpeg[:200]).group(1))
        in_hand += delivered < sent
    # A busy machine can delay the capture thread past the rule's grace now and then; with
    # frames waited for (the old rule) not one would have been delivered before its request.
    assert in_hand >= 7, f"{in_hand} of 10 stills answered from the frame in hand"
