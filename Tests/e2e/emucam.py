"""The emulated UVC webcam for end-to-end tests: builds libemucam.so (Tests/EmulatedCamera) once
per test session and gives the environment that makes a process see the camera.

    from emucam import emucam_env
    subprocess.run(["v4l2-ctl", "--all"], env=emucam_env())
    make_daemon(env=emucam_env(formats="yuyv", unplug_after=20))

Every keyword is a knob of Tests/EmulatedCamera/README.md without its EMUCAM_ prefix. The
library is only ever loaded this way; the daemon's build never contains it."""

import os
import subprocess
import threading
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPOSITORY / "Tests" / "EmulatedCamera" / "build.sh"
EMUCAM_LIB = str(REPOSITORY / ".build" / "emucam" / "libemucam.so")

KNOBS = (
    "device",          # path of the emulated node, default /dev/video0
    "formats",         # "mjpeg,yuyv" (default), "yuyv", "yuyv,mjpeg", ...
    "fps",             # default frame rate, 1...120 (30)
    "unplug_after",    # frames until the device disappears
    "unplug_seconds",  # how long it stays gone (1)
    "unplug_times",    # how many unplugs at most, 0 = every time (1)
    "stall_after",     # frames per stream until frames stop without an error
    "hang_after",      # buffers dequeued until VIDIOC_DQBUF never returns (a wedged driver)
    "open_error",      # errno name open() fails with: EACCES, EBUSY, ...
    "mjpeg_no_dht",    # True or "every:N": MJPEG frames without Huffman tables
    "corrupt_every",   # every Nth MJPEG frame truncated
    "stamp",           # True: MJPEG frames carry a COM segment "emucam-t=<CLOCK_REALTIME ns>"
    "log",             # True: trace every call on the device to stderr
    "state_dir",       # directory for format, rate and controls shared between processes
)

_build_lock = threading.Lock()
_built = False


def build_emucam():
    """Builds the library the first time it is called in this process; returns EMUCAM_LIB."""
    global _built
    with _build_lock:
        if not _built:
            result = subprocess.run(["bash", str(BUILD_SCRIPT), str(Path(EMUCAM_LIB).parent)],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError("building libemucam.so failed:\n" + result.stdout + result.stderr)
            _built = True
    return EMUCAM_LIB


def _knob_value(value):
    if value is True:
        return "1"
    if value is False:
        return "0"
    return str(value)


def emucam_env(base=None, **knobs):
    """A complete environment (os.environ, or `base`) with the camera preloaded and the given
    knobs set. EMUCAM_* variables already present are dropped, so only `knobs` apply."""
    unknown = set(knobs) - set(KNOBS)
    if unknown:
        raise TypeError(f"unknown emulated camera knobs: {sorted(unknown)}")
    library = build_emucam()
    env = {key: value for key, value in (os.environ if base is None else base).items()
           if not key.startswith("EMUCAM_")}
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = library + (" " + preload if preload else "")
    for knob, value in knobs.items():
        if value is not None:
            env["EMUCAM_" + knob.upper()] = _knob_value(value)
    return env
