"""The burned-in text end to end, on the emulated camera's colour bars (white at the left): the
text's box darkens its corner of the bar behind it and the rest of the picture is the camera's;
drawn on the targets it is on and nowhere else (MJPEG passthrough stays byte-exact there)."""

import json

from emucam import camera_daemon
from test_orientation import BARS, close, pixels
from test_v4l2_camera import camera_frames, without_exif

TEXT = ["--overlay-text", "%Y-%m-%d %H:%M:%S.%f|{label}|{frame}", "--overlay-utc", "true", "--overlay-position",
        "top-left", "--overlay-size", "24", "--overlay-box-opacity", "255"]


def mean_luma(rgb, x0, y0, x1, y1):
    values = [sum(rgb(x, y)) / 3 for y in range(y0, y1, 2) for x in range(x0, x1, 2)]
    return sum(values) / len(values)


def assert_text_top_left(jpeg):
    """The opaque black box at the top left of the white bar; the bottom rows still the bars."""
    width, height, rgb = pixels(jpeg)
    assert mean_luma(rgb, 10, 10, 70, 30) < 120, "the box (black, with white text) over the white bar"
    assert mean_luma(rgb, 10, 400, 70, 460) > 170, "the white bar below it untouched"
    for bar, want in enumerate(BARS):
        assert close(rgb(40 + 80 * bar, 470), want), (bar, rgb(40 + 80 * bar, 470))


def test_mjpeg_pictures_only_keeps_the_preview_byte_exact(make_daemon, tmp_path):
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon, [*TEXT, "--overlay-on", "pictures"])
    status, _, record = d.json("POST", "/snap", body=json.dumps({"label": "porch"}))
    assert status == 201
    jpeg = d.request("GET", record["url"])[2]
    assert without_exif(jpeg) not in sent, "the picture is redrawn with its text"
    assert_text_top_left(jpeg)
    assert d.request("GET", "/preview.jpg")[2] in sent, "the preview is the camera's frame, byte for byte"


def test_yuyv_text_on_both_targets(make_daemon):
    d = camera_daemon(make_daemon, ["--camera-formats", "yuyv", *TEXT])
    assert_text_top_left(d.request("GET", d.snap()["url"])[2])
    assert_text_top_left(d.request("GET", "/preview.jpg")[2])


def test_yuyv_text_drawn_in_the_cameras_frame_does_not_build_up(make_daemon):
    """Text without picture fields on a YUYV camera is drawn in the decoder's own canvas, lent for
    the frame; every frame is converted into it afresh, so a half-transparent box darkens the
    white bar once (191 to about 95), never again frame after frame (47, 23...)."""
    d = camera_daemon(make_daemon, ["--camera-formats", "yuyv", "--overlay-text", "%H:%M:%S.%f #{frame}",
                                    "--overlay-position", "top-left", "--overlay-size", "24",
                                    "--overlay-box-opacity", "128"])
    previews = [d.request("GET", "/preview.jpg?fresh=true")[2] for _ in range(6)]
    assert len(set(previews)) == len(previews), "six different frames"
    for jpeg in previews:
        _, _, rgb = pixels(jpeg)
        # The box's top padding (rows 8 to 13 hold no glyph), over the white bar.
        assert 70 < mean_luma(rgb, 10, 10, 70, 13) < 125, mean_luma(rgb, 10, 10, 70, 13)
        assert mean_luma(rgb, 10, 400, 70, 460) > 170, "the white bar below the box untouched"
    _, _, picture = pixels(d.request("GET", d.snap()["url"])[2])
    assert 70 < mean_luma(picture, 10, 10, 70, 13) < 125, "the picture is the preview's frame, text and all"


def test_mjpeg_preview_only_and_rotation_keep_the_text_upright(make_daemon, tmp_path):
    sent = camera_frames(tmp_path)
    d = camera_daemon(make_daemon, [*TEXT, "--overlay-on", "preview", "--rotate", "180"])
    preview = d.request("GET", "/preview.jpg")[2]
    width, height, rgb = pixels(preview)
    # Turned, the white bar is at the right; the text is still drawn top left, over the black bar.
    assert close(rgb(600, 10), BARS[0])
    assert mean_luma(rgb, 10, 10, 70, 30) > 12, "white text on the black bar" 
    picture = d.request("GET", d.snap()["url"])[2]
    assert without_exif(picture) not in sent  # turned, so not the camera's bytes either
    _, _, prgb = pixels(picture)
    assert close(prgb(600, 10), BARS[0])
    assert mean_luma(prgb, 10, 10, 70, 30) < 8, "no text on the picture"


def test_a_missing_font_falls_back_with_a_log_line(make_daemon):
    d = make_daemon([*TEXT, "--overlay-font", "/nonexistent.ttf"])
    d.request("GET", "/preview.jpg")
    record = d.snap()
    assert d.request("GET", record["url"])[0] == 200
    assert any("built-in font" in line and "/nonexistent.ttf" in line for line in d.log_lines), d.log_lines
