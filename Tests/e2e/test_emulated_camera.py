"""End-to-end tests of the emulated UVC webcam (Tests/EmulatedCamera): the programs it has to
fool (v4l2-ctl, ffmpeg, ustreamer, djpeg on what they capture) and a V4L2 client in Python
(v4l2.py) for what those programs cannot show, such as poll() after an unplug."""

import json
import os
import re
import select
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

import v4l2
from emucam import CameraHolder, CameraPermissions, emucam_env

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = ["640x480", "1280x720", "1920x1080"]


def run(args, timeout=30, **knobs):
    """Runs a program under the emulated camera; returns the CompletedProcess (text)."""
    return subprocess.run(args, env=emucam_env(**knobs), capture_output=True, text=True,
                          timeout=timeout)


def run_client(script, timeout=30, steps=(), **knobs):
    """Runs a Python script using v4l2.py under the emulated camera; returns the JSON value it
    prints on its last line. Each of `steps` is called when the script prints "ready", and the
    script goes on when it reads a line after it."""
    env = emucam_env(**knobs)
    env["PYTHONPATH"] = HERE
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, text=True,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for step in steps:
            assert process.stdout.readline() == "ready\n", process.stderr.read()
            step()
            process.stdin.write("\n")
            process.stdin.flush()
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    return json.loads(stdout.strip().splitlines()[-1])


def jpeg_frames(data):
    """Splits a concatenation of JPEG frames at each start-of-image marker."""
    starts = [m.start() for m in re.finditer(b"\xff\xd8\xff", data)]
    return [data[a:b] for a, b in zip(starts, starts[1:] + [len(data)])]


def decodes(jpeg, width, height):
    """True if djpeg (libjpeg-turbo) decodes the JPEG to a picture of that size."""
    result = subprocess.run(["djpeg", "-pnm"], input=jpeg, capture_output=True)
    return result.returncode == 0 and result.stdout.split(b"\n")[1] == f"{width} {height}".encode()


def test_request_codes_match_videodev2():
    # Known values from <linux/videodev2.h> on 64-bit Linux: a wrong structure size in
    # v4l2.py would change them.
    assert v4l2.VIDIOC_QUERYCAP == 0x80685600
    assert v4l2.VIDIOC_S_FMT == 0xC0D05605
    assert v4l2.VIDIOC_REQBUFS == 0xC0145608
    assert v4l2.VIDIOC_DQBUF == 0xC0585611
    assert v4l2.VIDIOC_QUERYMENU == 0xC02C5625
    assert v4l2.VIDIOC_S_EXT_CTRLS == 0xC0205648
    assert v4l2.VIDIOC_S_PARM == 0xC0CC5616


def test_v4l2_ctl_all_describes_the_camera():
    result = run(["v4l2-ctl", "-d", "/dev/video0", "--all"])
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"Driver name\s*: uvcvideo", out)
    assert re.search(r"Card type\s*: Emulated UVC Camera", out)
    assert re.search(r"Pixel Format\s*: 'MJPG'", out)
    assert re.search(r"Frames per second: 30\.000", out)
    assert "brightness 0x00980900" in out
    assert "failed" not in out + result.stderr


def test_v4l2_compliance_fails_only_for_control_events():
    # v4l2-compliance (v4l-utils) checks the V4L2 API the way kernel maintainers do, streaming
    # included (-s). Control events (VIDIOC_SUBSCRIBE_EVENT) are not emulated.
    result = run(["v4l2-compliance", "-d", "/dev/video0", "-s10"], timeout=60)
    failed = re.findall(r"^\s*test (.+): FAIL$", result.stdout, re.M)
    assert failed == ["VIDIOC_(UN)SUBSCRIBE_EVENT/DQEVENT"], result.stdout
    assert re.search(r"Total for uvcvideo device /dev/video0: \d+, Succeeded: \d+, Failed: 1,",
                     result.stdout)


def test_list_formats_ext_shows_both_formats_three_sizes_and_three_rates():
    result = run(["v4l2-ctl", "-d", "/dev/video0", "--list-formats-ext"])
    assert result.returncode == 0, result.stderr
    formats = {}
    for line in result.stdout.splitlines():
        if m := re.search(r"\[\d+\]: '(\w+)'", line):
            current = formats.setdefault(m.group(1), {})
        elif m := re.search(r"Size: Discrete (\d+x\d+)", line):
            rates = current.setdefault(m.group(1), [])
        elif m := re.search(r"\(([\d.]+) fps\)", line):
            rates.append(float(m.group(1)))
    expected_sizes = {size: [30.0, 15.0, 5.0] for size in SIZES}
    assert formats == {"MJPG": expected_sizes, "YUYV": expected_sizes}
    assert list(formats) == ["MJPG", "YUYV"]


def test_formats_knob_restricts_and_reorders_and_fps_knob_sets_the_default_rate():
    result = run(["v4l2-ctl", "--list-formats-ext", "--get-parm"], formats="yuyv,mjpeg", fps=60)
    assert result.returncode == 0, result.stderr
    assert re.findall(r"'(\w+)'", result.stdout) == ["YUYV", "MJPG"]
    assert "(60.000 fps)" in result.stdout
    assert re.search(r"Frames per second: 60\.000", result.stdout)
    assert re.findall(r"'(\w+)'", run(["v4l2-ctl", "--list-formats"], formats="yuyv").stdout) == ["YUYV"]


def test_formats_knob_offers_rgb24():
    listed = run(["v4l2-ctl", "--list-formats"], formats="rgb24,yuyv").stdout
    assert re.findall(r"'(\w+)'", listed) == ["RGB3", "YUYV"]
    assert re.findall(r"'(\w+)'", run(["v4l2-ctl", "--list-formats"], formats="rgb24").stdout) == ["RGB3"]


def test_device_is_listed_and_looks_like_a_video_node():
    listed = run(["v4l2-ctl", "--list-devices"])
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"Emulated UVC Camera \(usb-[^)]*\):\n\s+/dev/video0", listed.stdout)
    node = run_client("""
        import json, os, stat
        st = os.stat("/dev/video0")
        print(json.dumps({"listed": "video0" in os.listdir("/dev"),
                          "char": stat.S_ISCHR(st.st_mode), "major": os.major(st.st_rdev),
                          "rw": os.access("/dev/video0", os.R_OK | os.W_OK),
                          "fstat_char": stat.S_ISCHR(os.fstat(os.open("/dev/video0", os.O_RDWR)).st_mode),
                          "sysfs": open("/sys/class/video4linux/video0/name").read()}))
    """)
    assert node == {"listed": True, "char": True, "major": 81, "rw": True, "fstat_char": True,
                    "sysfs": "Emulated UVC Camera\n"}


def test_v4l2_ctl_captures_yuyv_at_30_fps(tmp_path):
    out = tmp_path / "frames.yuv"
    started = time.monotonic()
    result = run(["v4l2-ctl", "-d", "/dev/video0",
                  "--set-fmt-video=width=1280,height=720,pixelformat=YUYV",
                  "--stream-mmap", "--stream-count=60", f"--stream-to={out}"])
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size == 60 * 1280 * 720 * 2
    # The 60th frame comes 60 intervals (2 s) after STREAMON; process start adds a little.
    assert 1.95 < elapsed < 3.5


def test_ffmpeg_captures_mjpeg_that_djpeg_decodes(tmp_path):
    result = run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "v4l2", "-input_format", "mjpeg",
                  "-video_size", "640x480", "-i", "/dev/video0", "-frames:v", "10",
                  str(tmp_path / "out%02d.jpg")])
    assert result.returncode == 0, result.stderr
    pictures = sorted(tmp_path.glob("out*.jpg"))
    assert len(pictures) == 10
    assert all(decodes(p.read_bytes(), 640, 480) for p in pictures)


def test_raw_mjpeg_frames_carry_huffman_tables_by_default(tmp_path):
    out = tmp_path / "frames.mjpeg"
    result = run(["v4l2-ctl", "--set-fmt-video=width=640,height=480,pixelformat=MJPG",
                  "--stream-mmap", "--stream-count=4", f"--stream-to={out}"])
    assert result.returncode == 0, result.stderr
    frames = jpeg_frames(out.read_bytes())
    assert len(frames) == 4
    assert all(b"\xff\xc4" in f and f.endswith(b"\xff\xd9") for f in frames)
    assert all(decodes(f, 640, 480) for f in frames)
    assert not any(STAMP.match(f) for f in frames)


def test_mjpeg_without_dht_still_decodes(tmp_path):
    out = tmp_path / "frames.mjpeg"
    result = run(["v4l2-ctl", "--set-fmt-video=width=640,height=480,pixelformat=MJPG",
                  "--stream-mmap", "--stream-count=5", f"--stream-to={out}"], mjpeg_no_dht=True)
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    assert data.count(b"\xff\xd8") == 5
    assert b"\xff\xc4" not in data
    decoded = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-f", "mjpeg", "-i",
                              str(out), "-f", "framemd5", "-"], capture_output=True, text=True)
    assert decoded.returncode == 0 and decoded.stderr == "", decoded.stderr
    assert len([l for l in decoded.stdout.splitlines() if not l.startswith("#")]) == 5


# EMUCAM_STAMP: SOI, then a COM segment of 30 bytes with the delivery time in nanoseconds.
STAMP = re.compile(rb"\A\xff\xd8\xff\xfe\x00\x1eemucam-t=(\d{19})\xff")


def test_stamp_knob_puts_the_delivery_time_in_a_com_segment(tmp_path):
    out = tmp_path / "frames.mjpeg"
    started = time.time_ns()
    result = run(["v4l2-ctl", "--set-fmt-video=width=1280,height=720,pixelformat=MJPG",
                  "--stream-mmap", "--stream-count=10", f"--stream-to={out}"], stamp=True)
    ended = time.time_ns()
    assert result.returncode == 0, result.stderr
    frames = jpeg_frames(out.read_bytes())
    assert len(frames) == 10
    stamps = [int(STAMP.match(f).group(1)) for f in frames]
    assert all(started < stamp < ended for stamp in stamps)
    assert all(a < b for a, b in zip(stamps, stamps[1:]))
    # One frame interval (33 ms) apart on average; a busy machine may skip a tick or two.
    assert 25e6 < (stamps[-1] - stamps[0]) / 9 < 100e6
    assert all(f.endswith(b"\xff\xd9") and decodes(f, 1280, 720) for f in frames)


CAPTURE_MJPEG = """
    import json, v4l2
    camera = v4l2.Camera()
    camera.set_format(640, 480, "MJPG")
    camera.start(4)
    frames = camera.frames(10)
    print(json.dumps([{"dht": b"\\xff\\xc4" in data, "eoi": data.endswith(b"\\xff\\xd9"),
                       "size": len(data)} for _, data in frames]))
"""


def test_dht_stripped_from_every_nth_frame():
    frames = run_client(CAPTURE_MJPEG, mjpeg_no_dht="every:3")
    assert [f["dht"] for f in frames] == [n % 3 != 0 for n in range(1, 11)]


def test_every_nth_mjpeg_frame_is_truncated():
    frames = run_client(CAPTURE_MJPEG, corrupt_every=5)
    assert [f["eoi"] for f in frames] == [n % 5 != 0 for n in range(1, 11)]
    whole = frames[0]["size"]
    assert frames[4]["size"] < whole * 0.6 and frames[9]["size"] < whole * 0.6


def test_v4l2_ctl_lists_sets_and_gets_controls(tmp_path):
    state = {"state_dir": tmp_path}
    listed = run(["v4l2-ctl", "--list-ctrls"], **state)
    assert listed.returncode == 0, listed.stderr
    for name in ["brightness", "contrast", "saturation", "white_balance_automatic",
                 "power_line_frequency", "auto_exposure", "exposure_time_absolute"]:
        assert re.search(rf"^\s*{name} 0x", listed.stdout, re.M), name
    assert run(["v4l2-ctl", "--set-ctrl", "brightness=10"], **state).returncode == 0
    assert run(["v4l2-ctl", "--get-ctrl", "brightness"], **state).stdout.strip() == "brightness: 10"
    too_bright = run(["v4l2-ctl", "--set-ctrl", "brightness=100"], **state)
    assert too_bright.returncode != 0
    assert "Numerical result out of range" in too_bright.stderr
    assert run(["v4l2-ctl", "--get-ctrl", "brightness"], **state).stdout.strip() == "brightness: 10"
    # Without a state directory every process starts from the defaults.
    assert run(["v4l2-ctl", "--get-ctrl", "brightness"]).stdout.strip() == "brightness: 0"


def test_control_ioctls_follow_the_v4l2_api():
    result = run_client("""
        import ctypes, json, v4l2
        camera = v4l2.Camera()
        ids, query = [], v4l2.QueryControl(id=v4l2.CTRL_FLAG_NEXT_CTRL)
        while v4l2.error_of(camera.ioctl, v4l2.VIDIOC_QUERYCTRL, query) is None:
            ids.append(query.id)
            query = v4l2.QueryControl(id=query.id | v4l2.CTRL_FLAG_NEXT_CTRL)
        def menu(index):
            item = v4l2.QueryMenu(id=v4l2.CID_EXPOSURE_AUTO, index=index)
            return v4l2.error_of(camera.ioctl, v4l2.VIDIOC_QUERYMENU, item) or item.name.decode()
        def ext(request, *pairs):
            array = (v4l2.ExtControl * len(pairs))(*[v4l2.ExtControl(id=i, value=v) for i, v in pairs])
            controls = v4l2.ExtControls(count=len(pairs), controls=array)
            error = v4l2.error_of(camera.ioctl, request, controls)
            return error, controls.error_idx
        BRIGHTNESS, POWER_LINE = v4l2.CID_BRIGHTNESS, v4l2.CID_POWER_LINE_FREQUENCY
        before = camera.get_control(BRIGHTNESS)
        camera.set_control(BRIGHTNESS, 40)
        print(json.dumps({
            "ids": ids, "before": before, "after": camera.get_control(BRIGHTNESS),
            "too_high": v4l2.error_of(camera.set_control, BRIGHTNESS, 65),
            "unknown": v4l2.error_of(camera.get_control, 0x00980999),
            "menu": [menu(i) for i in range(5)],
            "set_bad": ext(v4l2.VIDIOC_S_EXT_CTRLS, (BRIGHTNESS, 5), (POWER_LINE, 3)),
            "try_bad": ext(v4l2.VIDIOC_TRY_EXT_CTRLS, (BRIGHTNESS, 5), (POWER_LINE, 3)),
            "unchanged": camera.get_control(BRIGHTNESS),
            "set_good": ext(v4l2.VIDIOC_S_EXT_CTRLS, (BRIGHTNESS, -7), (POWER_LINE, 2)),
            "changed": [camera.get_control(BRIGHTNESS), camera.get_control(POWER_LINE)],
            "reopened": v4l2.Camera().get_control(BRIGHTNESS),
        }))
    """)
    assert result["ids"] == [0x980001, 0x980900, 0x980901, 0x980902, 0x98090C, 0x980918,
                             0x9A0001, 0x9A0901, 0x9A0902]
    assert (result["before"], result["after"]) == (0, 40)
    assert result["too_high"] == "ERANGE" and result["unknown"] == "EINVAL"
    assert result["menu"] == ["EINVAL", "Manual Mode", "EINVAL", "Aperture Priority Mode", "EINVAL"]
    # A failed validation sets nothing; error_idx is count for S and the culprit for TRY.
    assert result["set_bad"] == ["ERANGE", 2] and result["try_bad"] == ["ERANGE", 1]
    assert result["unchanged"] == 40
    assert result["set_good"] == [None, 0] and result["changed"] == [-7, 2]
    # Within one process the camera keeps its values across opens.
    assert result["reopened"] == -7


def test_brightness_and_motion_show_in_yuyv_frames():
    result = run_client("""
        import json, v4l2
        camera = v4l2.Camera()
        camera.set_format(640, 480, "YUYV")
        camera.start(4)
        def mean_luma(data):
            return sum(data[0::2]) / (len(data) / 2)
        first, second = [data for _, data in camera.frames(2)]
        camera.set_control(v4l2.CID_BRIGHTNESS, 40)
        camera.frames(4)
        brighter = camera.frames(1)[0][1]
        print(json.dumps({"size": len(first), "moved": first != second,
                          "dark": mean_luma(first), "bright": mean_luma(brighter)}))
    """)
    assert result["size"] == 640 * 480 * 2
    assert result["moved"]
    assert result["bright"] - result["dark"] > 25


@pytest.mark.parametrize("error,message", [("EBUSY", "Device or resource busy"),
                                           ("EACCES", "Permission denied")])
def test_open_error_knob_fails_open(error, message):
    result = run(["v4l2-ctl", "-d", "/dev/video0", "--all"], open_error=error)
    assert result.returncode != 0
    assert message in result.stderr


def test_open_error_file_takes_permissions_away_and_gives_them_back_while_a_program_runs(tmp_path):
    permissions = CameraPermissions(tmp_path)
    result = run_client("""
        import json, os, sys, v4l2
        def opened():
            try:
                v4l2.Camera().close()
                return "opened"
            except OSError as error:
                return os.strerror(error.errno)
        before = opened()
        held = v4l2.Camera()
        print("ready", flush=True)
        sys.stdin.readline()  # the test takes the permissions away
        taken = [opened(), os.access("/dev/video0", os.R_OK | os.W_OK), held.get_control(v4l2.CID_BRIGHTNESS)]
        print("ready", flush=True)
        sys.stdin.readline()  # and gives them back
        print(json.dumps({"before": before, "taken": taken, "back": opened()}))
    """, steps=[permissions.take_away, permissions.give_back], **permissions.knobs())
    assert result["before"] == "opened"
    # A descriptor opened before keeps working, as on Linux; new opens are refused.
    assert result["taken"] == ["Permission denied", False, 0]
    assert result["back"] == "opened"


def test_a_camera_streaming_in_another_process_is_busy_until_that_process_ends(tmp_path):
    holder = CameraHolder(tmp_path).start()
    try:
        refused = run(["v4l2-ctl", "-d", "/dev/video0", "--stream-mmap", "--stream-count=3",
                       "--stream-to=/dev/null"], state_dir=tmp_path)
        assert "VIDIOC_REQBUFS returned -1 (Device or resource busy)" in refused.stderr
        # Opening and querying it still work from the other process, as with uvcvideo.
        assert "Emulated UVC Camera" in run(["v4l2-ctl", "-d", "/dev/video0", "--all"], state_dir=tmp_path).stdout
    finally:
        holder.stop()
    assert holder.owner_pid() is None, "the lock went with the killed process"
    out = tmp_path / "frames.raw"
    taken = run(["v4l2-ctl", "-d", "/dev/video0", "--stream-mmap", "--stream-count=3", f"--stream-to={out}"],
                state_dir=tmp_path)
    assert "busy" not in taken.stderr and out.stat().st_size > 0, taken.stderr


def test_unplug_ends_a_v4l2_ctl_capture_after_n_frames(tmp_path):
    out = tmp_path / "frames.yuv"
    result = run(["v4l2-ctl", "--set-fmt-video=width=640,height=480,pixelformat=YUYV",
                  "--stream-mmap", "--stream-count=100", f"--stream-to={out}"], unplug_after=20)
    # v4l2-ctl reports the failed DQBUF and stops the capture (its exit status stays 0).
    assert "VIDIOC_DQBUF: failed: No such device" in result.stderr
    frame = 640 * 480 * 2
    assert out.stat().st_size % frame == 0
    assert 15 <= out.stat().st_size // frame <= 20


def test_unplugged_device_reports_hangup_vanishes_and_comes_back_fresh():
    result = run_client("""
        import errno, json, os, select, time, v4l2
        camera = v4l2.Camera()
        camera.set_format(640, 480, "YUYV")
        camera.set_control(v4l2.CID_BRIGHTNESS, 30)
        camera.start(4)
        epoll = select.epoll()
        epoll.register(camera.fd, select.EPOLLIN)
        frames = 0
        while True:
            events = camera.poll(3)
            try:
                buffer, _ = camera.dequeue()
            except OSError as error:
                dq_error = errno.errorcode[error.errno]
                break
            frames += 1
            camera.queue(buffer.index)
        gone = {"frames": frames, "dqbuf": dq_error, "poll": events,
                "epoll": epoll.poll(0)[0][1],
                "querycap": v4l2.error_of(camera.capability),
                "open": v4l2.error_of(os.open, "/dev/video0", os.O_RDWR),
                "access": os.access("/dev/video0", os.F_OK),
                "listed": "video0" in os.listdir("/dev")}
        time.sleep(0.7)
        fresh = v4l2.Camera()
        fresh.set_format(640, 480, "YUYV")
        fresh.start(4)
        back = {"listed": "video0" in os.listdir("/dev"),
                "brightness": fresh.get_control(v4l2.CID_BRIGHTNESS),
                "sequences": [b.sequence for b, _ in fresh.frames(15)],
                "old_fd": v4l2.error_of(camera.capability)}
        print(json.dumps({"gone": gone, "back": back}))
    """, unplug_after=10, unplug_seconds=0.5)
    gone, back = result["gone"], result["back"]
    assert 8 <= gone["frames"] <= 10 and gone["dqbuf"] == "ENODEV"
    hangup = select.POLLERR | select.POLLHUP
    assert gone["poll"] & hangup == hangup
    assert gone["epoll"] & hangup == hangup
    assert gone["querycap"] == "ENODEV" and gone["open"] == "ENOENT"
    assert not gone["access"] and not gone["listed"]
    # A fresh device: default controls, sequence from 0, and (one unplug by default) no
    # second unplug after another 10 frames.
    assert back["listed"] and back["brightness"] == 0
    assert back["sequences"] == list(range(15))
    assert back["old_fd"] == "ENODEV"


def test_stall_stops_frames_without_an_error():
    result = run_client("""
        import json, v4l2
        camera = v4l2.Camera()
        camera.set_format(640, 480, "YUYV")
        camera.start(4)
        first = len(camera.frames(5))
        quiet = camera.poll(0.5)
        print(json.dumps({"first": first, "quiet": quiet,
                          "dqbuf": v4l2.error_of(camera.dequeue),
                          "querycap": v4l2.error_of(camera.capability)}))
    """, stall_after=5)
    assert result == {"first": 5, "quiet": 0, "dqbuf": "EAGAIN", "querycap": None}


def test_second_handle_cannot_stream_while_the_first_owns_the_buffers():
    result = run_client("""
        import json, v4l2
        first, second = v4l2.Camera(), v4l2.Camera()
        first.request_buffers(2)
        busy = {"reqbufs": v4l2.error_of(second.request_buffers, 2),
                "s_fmt": v4l2.error_of(second.set_format, 640, 480, "YUYV"),
                "querycap": v4l2.error_of(second.capability)}
        first.request_buffers(0)
        print(json.dumps({"busy": busy, "after_release": v4l2.error_of(second.request_buffers, 2)}))
    """)
    assert result == {"busy": {"reqbufs": "EBUSY", "s_fmt": "EBUSY", "querycap": None},
                      "after_release": None}


def test_dqbuf_blocks_unless_nonblocking_and_timestamps_are_monotonic():
    result = run_client("""
        import json, time, v4l2
        blocking = v4l2.Camera(nonblocking=False)
        blocking.set_format(640, 480, "YUYV")
        blocking.start(4)
        buffer, _ = blocking.dequeue()
        now = time.clock_gettime(time.CLOCK_MONOTONIC)
        stamps = [buffer.timestamp.tv_sec + buffer.timestamp.tv_usec / 1e6]
        sequences = [buffer.sequence]
        for _ in range(15):
            blocking.queue(buffer.index)
            buffer, _ = blocking.dequeue()
            stamps.append(buffer.timestamp.tv_sec + buffer.timestamp.tv_usec / 1e6)
            sequences.append(buffer.sequence)
        blocking.stop()
        blocking.close()
        quick = v4l2.Camera()
        quick.set_format(640, 480, "YUYV")
        quick.start(4)
        print(json.dumps({"age": now - stamps[0], "stamps": stamps, "sequences": sequences,
                          "flags": buffer.flags, "nonblocking": v4l2.error_of(quick.dequeue)}))
    """)
    stamps = result["stamps"]
    assert 0 <= result["age"] < 0.5
    assert result["flags"] & v4l2.BUF_FLAG_TIMESTAMP_MONOTONIC
    sequences = result["sequences"]
    assert all(b > a for a, b in zip(stamps, stamps[1:]))
    assert all(b > a for a, b in zip(sequences, sequences[1:]))
    # 1/30 s a frame; a dropped frame (a gap in the sequence) still took its interval.
    interval = (stamps[-1] - stamps[0]) / (sequences[-1] - sequences[0])
    assert abs(interval - 1 / 30) < 0.002
    assert result["nonblocking"] == "EAGAIN"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ustreamer_snapshot(args, **knobs):
    """Starts ustreamer on the camera with these extra arguments; returns (snapshot, stderr)."""
    port = free_port()
    process = subprocess.Popen(
        ["ustreamer", "--device=/dev/video0", "--format=MJPEG", "--resolution=640x480",
         "--host=127.0.0.1", f"--port={port}"] + args,
        env=emucam_env(**knobs), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        snapshot = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and snapshot is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/snapshot", timeout=2) as response:
                    # Until the first frame ustreamer serves a placeholder marked offline.
                    if response.headers["X-UStreamer-Online"] == "true":
                        snapshot = response.read()
            except OSError:
                time.sleep(0.2)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=10)
    return snapshot, stderr


def test_ustreamer_serves_a_snapshot_from_the_camera():
    snapshot, stderr = ustreamer_snapshot([])
    assert snapshot is not None, "ustreamer served no snapshot"
    assert snapshot.startswith(b"\xff\xd8") and decodes(snapshot, 640, 480)
    assert b"Capturing started" in stderr


def test_ustreamer_passes_the_stamp_through_untouched():
    # benchmarks/preview_bench.py measures latency with the stamp, through this passthrough.
    snapshot, _ = ustreamer_snapshot(["--encoder=HW"], stamp=True)
    assert snapshot is not None, "ustreamer served no snapshot"
    stamp = STAMP.match(snapshot)
    assert stamp is not None, snapshot[:64]
    assert 0 < time.time_ns() - int(stamp.group(1)) < 5e9
    assert decodes(snapshot, 640, 480)


def test_a_bad_knob_stops_the_process_with_a_message():
    result = run(["true"], fps="fast")
    assert result.returncode == 2
    assert "EMUCAM_FPS=fast" in result.stderr
