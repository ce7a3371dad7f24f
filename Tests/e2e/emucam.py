"""The emulated UVC webcam for end-to-end tests: builds libemucam.so (Tests/EmulatedCamera) once
per test session and gives the environment that makes a process see the camera.

    from emucam import emucam_env
    subprocess.run(["v4l2-ctl", "--all"], env=emucam_env())
    make_daemon(env=emucam_env(formats="yuyv", unplug_after=20))

Every keyword is a knob of Tests/EmulatedCamera/README.md without its EMUCAM_ prefix. The
library is only ever loaded this way; the daemon's build never contains it.

The camera's faults shared by the tests that aim them (test_v4l2_camera.py one by one,
test_faults.py together): `camera_daemon` starts shutterd on the camera with quick reopens,
`CameraPermissions` takes the device's permissions away and gives them back while a program
runs (EACCES at its next open), `CameraHolder` is another program streaming from the camera
(EBUSY for whoever claims it next), and `assert_camera_refused` checks what a client sees while
the camera cannot be used."""

import os
import subprocess
import time
from pathlib import Path

from preload_library import PreloadLibrary

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
    "open_error_file", # a file holding such a name, read at every open (CameraPermissions)
    "mjpeg_no_dht",    # True or "every:N": MJPEG frames without Huffman tables
    "corrupt_every",   # every Nth MJPEG frame truncated
    "stamp",           # True: MJPEG frames carry a COM segment "emucam-t=<CLOCK_REALTIME ns>"
    "log",             # True: trace every call on the device to stderr
    "state_dir",       # directory for format, rate and controls shared between processes
)

_library = PreloadLibrary(BUILD_SCRIPT, EMUCAM_LIB)


def build_emucam():
    """Builds the library the first time it is called in this process; returns EMUCAM_LIB."""
    return _library.build()


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


def wait_for(predicate, timeout=10.0, step=0.05):
    """The first true value of `predicate()`, polled every `step` seconds for `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not reached in time")


def camera_daemon(make_daemon, args=(), data_dir=None, **knobs):
    """shutterd on the emulated camera at 640x480 and 30 fps, reopening it every 300 ms."""
    return make_daemon(["--camera", "/dev/video0", "--size", "640x480", "--fps", "30", "--warmup-ms", "200",
                        "--reopen-interval-ms", "300", *args], env=emucam_env(**knobs), data_dir=data_dir)


def assert_camera_refused(daemon, words):
    """While the camera cannot be used, the daemon says why (`words`) in /healthz (waiting for it
    to notice), in /status and in the 503 a snap gets, and goes on serving the library."""
    health = wait_for(lambda: (lambda h: h if h[0] == 503 and words in (h[2].get("reason") or "") else None)(
        daemon.json("GET", "/healthz")), timeout=15)
    assert health[2]["status"] == "degraded", health
    _, _, status = daemon.json("GET", "/status")
    assert status["camera"]["state"] == "failed" and words in status["camera"]["failure"], status["camera"]
    status, headers, body = daemon.json("POST", "/snap")
    assert status == 503 and body["error"] == "camera unavailable" and words in body["detail"], (status, body)
    assert headers["retry-after"]
    assert daemon.request("GET", "/library")[0] == 200
    daemon.wait_for_log(words)


class CameraPermissions:
    """The emulated device's permissions, switched while programs run: `take_away()` makes every
    later open() and access(R_OK|W_OK) of the node fail with EACCES, as after a chmod or a udev
    rule taking the node from the user's group; descriptors already open keep working, as they
    do on Linux. Pass `knobs()` to emucam_env or camera_daemon."""

    def __init__(self, directory):
        self.path = Path(directory) / "open_error"
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def knobs(self):
        return {"open_error_file": self.path}

    def take_away(self):
        temporary = self.path.with_suffix(".new")
        temporary.write_text("EACCES\n")
        os.rename(temporary, self.path)  # read whole or not at all

    def give_back(self):
        self.path.unlink(missing_ok=True)


class CameraHolder:
    """Another program streaming from the camera (v4l2-ctl --stream-mmap) until `stop()`.

    Processes that load the emulated camera with the same `state_dir` share it as a real device
    is shared: the one streaming holds <state_dir>/video0.owner locked, and any other gets EBUSY
    from the ioctls that would claim it (S_FMT, REQBUFS, ...), as uvcvideo answers."""

    def __init__(self, state_dir):
        self.owner_file = Path(state_dir) / "video0.owner"
        self.env = emucam_env(state_dir=state_dir)
        self.process = None

    def owner_pid(self):
        """The process holding the camera now (its lock on the owner file, from /proc/locks), or None."""
        try:
            inode = os.stat(self.owner_file).st_ino
        except FileNotFoundError:
            return None
        with open("/proc/locks") as locks:
            for line in locks:
                # "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"
                fields = line.split()
                if fields[1] == "FLOCK" and int(fields[5].rsplit(":", 1)[1]) == inode:
                    return int(fields[4])
        return None

    def start(self, timeout=10):
        """Starts streaming, trying again while the camera's current owner lets it go."""
        deadline = time.monotonic() + timeout
        while True:
            # --stream-count=0: until killed.
            self.process = subprocess.Popen(
                ["v4l2-ctl", "-d", "/dev/video0", "--stream-mmap", "--stream-count=0", "--stream-to=/dev/null"],
                env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            while self.process.poll() is None and self.owner_pid() != self.process.pid:
                time.sleep(0.02)
            if self.process.poll() is None:
                return self
            # Refused: v4l2-ctl ends when REQBUFS is EBUSY; the owner may be letting go.
            error = self.process.stderr.read().decode()
            if time.monotonic() > deadline:
                raise AssertionError(f"could not take the camera from {self.owner_pid()}: {error}")
            time.sleep(0.05)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None
