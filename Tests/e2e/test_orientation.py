"""--rotate and --flip end to end: the emulated camera's colour bars (white at the left, black
at the right) land where the turn puts them, for MJPEG (tjTransform) and YUYV (turned before the
encode), in pictures and the preview alike, and every size reported is the turned one."""

import subprocess

import pytest

from emucam import camera_daemon
from test_snap_library import djpeg_size
from test_v4l2_camera import without_exif

BARS = [(191, 191, 191), (191, 191, 0), (0, 191, 191), (0, 191, 0), (191, 0, 191), (191, 0, 0), (0, 0, 191),
        (0, 0, 0)]


def pixels(jpeg):
    """(width, height, rgb(x, y)) of the decoded JPEG."""
    width, height = djpeg_size(jpeg)
    data = subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True, check=True).stdout.split(b"\n", 3)[3]

    def rgb(x, y):
        i = (y * width + x) * 3
        return tuple(data[i:i + 3])

    return width, height, rgb


def close(got, want):
    return all(abs(g - w) <= 24 for g, w in zip(got, want))


def turned_point(rotate, flip, x, y, width=640, height=480):
    """Where pixel (x, y) of the camera's `width` x `height` picture lands: clockwise quarter
    turns one at a time, then the flip."""
    for _ in range(rotate // 90):
        x, y, width, height = height - 1 - y, x, height, width
    if flip == "horizontal":
        x = width - 1 - x
    elif flip == "vertical":
        y = height - 1 - y
    return x, y


def assert_bars(jpeg, rotate, flip):
    width, height, rgb = pixels(jpeg)
    assert (width, height) == ((480, 640) if rotate % 180 else (640, 480))
    for bar, want in enumerate(BARS):
        # The middle of each bar, near the camera picture's bottom (away from the moving band).
        got = rgb(*turned_point(rotate, flip, 40 + 80 * bar, 470))
        assert close(got, want), (bar, got, want, rotate, flip)


@pytest.mark.parametrize("fmt, rotate, flip", [
    ("mjpeg", 90, "none"), ("mjpeg", 270, "horizontal"), ("mjpeg", 0, "horizontal"), ("yuyv", 90, "none"),
    ("yuyv", 180, "none"), ("yuyv", 0, "vertical"),
])
def test_pictures_and_the_preview_are_turned(make_daemon, fmt, rotate, flip):
    d = camera_daemon(make_daemon, ["--camera-formats", fmt, "--rotate", str(rotate), "--flip", flip])
    _, _, status = d.json("GET", "/status")
    swapped = rotate % 180 != 0
    assert (status["camera"]["width"], status["camera"]["height"]) == ((480, 640) if swapped else (640, 480))
    record = d.snap()
    assert (record["width"], record["height"]) == ((480, 640) if swapped else (640, 480))
    jpeg = d.request("GET", record["url"])[2]
    assert_bars(jpeg, rotate, flip)
    status, _, preview = d.request("GET", "/preview.jpg")
    assert status == 200
    assert_bars(preview, rotate, flip)


def test_without_rotation_mjpeg_stays_byte_exact(make_daemon, tmp_path):
    from test_v4l2_camera import camera_frames
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon, ["--rotate", "0", "--flip", "none"])
    assert without_exif(d.request("GET", d.snap()["url"])[2]) in sent
    assert d.request("GET", "/preview.jpg")[2] in sent


def test_a_bad_rotation_is_refused_at_start(make_daemon):
    from conftest import BINARY
    result = subprocess.run([BINARY, "--rotate", "45"], capture_output=True, text=True, timeout=20)
    assert result.returncode == 2
    assert "rotate: '45' is not one of 0, 90, 180, 270" in result.stderr
