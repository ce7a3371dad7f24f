"""Fault injection for the end-to-end fault tests (test_faults.py, benchmarks/fault_rounds.py).

`DiskFull` builds libdiskfull.so (Tests/FaultInjection) once per process and gives the
environment that preloads it into the daemon; `fail(...)` and `clear()` switch ENOSPC on and
off while the daemon runs, and `injected()` reads which calls it failed.

    disk = DiskFull(tmp_path)
    d = make_daemon(args, env=disk.env())
    disk.fail("rename", "/media/.")        # every rename of a picture's temporary file: ENOSPC
    disk.clear()

`exit_handlers_env(log_file)` preloads libexithandlers.so, which writes down every handler a
library registers to run at exit.

`faketime_env(offset_file)` runs the daemon under libfaketime with a wall clock that
`step_wall_clock(offset_file, "+3600")` steps while it runs, and a monotonic clock left alone.

`catalog_state(data_dir)` reads what is on disk (rows, event ids, picture and thumbnail files)
with the sqlite3 module, for checks after a daemon has been killed."""

import os
import sqlite3
from pathlib import Path

from preload_library import PreloadLibrary

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPOSITORY / "Tests" / "FaultInjection" / "build.sh"
DISKFULL_LIB = str(REPOSITORY / ".build" / "faults" / "libdiskfull.so")
MONOTONIC_TIMERS_LIB = str(REPOSITORY / ".build" / "faults" / "libmonotonictimers.so")
EXIT_HANDLERS_LIB = str(REPOSITORY / ".build" / "faults" / "libexithandlers.so")
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

_library = PreloadLibrary(BUILD_SCRIPT, DISKFULL_LIB)


def build_diskfull():
    """Builds the libraries the first time it is called in this process; returns libdiskfull.so's path."""
    return _library.build()


def exit_handlers_env(log_file, base=None):
    """A complete environment (os.environ, or `base`) that preloads libexithandlers.so: every
    handler a library registers to run at exit is written to `log_file` as "LIBRARY SYMBOL"."""
    build_diskfull()
    env = dict(os.environ if base is None else base)
    env.update({"LD_PRELOAD": EXIT_HANDLERS_LIB, "EXIT_HANDLERS_LOG": str(log_file)})
    return env


def faketime_env(offset_file, base=None):
    """A complete environment (os.environ, or `base`) that runs a program under libfaketime, its
    wall clock offset by what `offset_file` says ("+0", "+3600", "-3600"; read at every call), its
    monotonic clocks and timers the kernel's, as after an NTP step."""
    build_diskfull()
    env = dict(os.environ if base is None else base)
    env.update({
        # libmonotonictimers.so first, so its timerfd_settime is the one the program calls
        # (Tests/FaultInjection/monotonic_timers.c says why).
        "LD_PRELOAD": f"{MONOTONIC_TIMERS_LIB} {FAKETIME_LIB}",
        "FAKETIME_TIMESTAMP_FILE": str(offset_file),
        "FAKETIME_NO_CACHE": "1",
        # Only the wall clock steps: CLOCK_MONOTONIC stays the kernel's.
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        # Its "monotonic fix", on by default with this glibc, makes every pthread_cond_timedwait on
        # a CLOCK_MONOTONIC condition variable time out at once; off, they wait their time.
        "FAKETIME_FORCE_MONOTONIC_FIX": "0",
    })
    return env


def step_wall_clock(offset_file, offset):
    """Sets the faked wall clock's offset; rename(2), so it is never read half-written."""
    temporary = Path(str(offset_file) + ".new")
    temporary.write_text(f"{offset}\n")
    os.rename(temporary, offset_file)


class DiskFull:
    """The control and log files of one preloaded libdiskfull.so (Tests/FaultInjection/diskfull.c)."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.control = self.directory / "diskfull.control"
        self.log = self.directory / "diskfull.log"
        self._generation = 0

    def env(self, base=None):
        """A complete environment (os.environ, or `base`) with the library preloaded."""
        library = build_diskfull()
        env = dict(os.environ if base is None else base)
        preload = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = library + (" " + preload if preload else "")
        env["DISKFULL_CONTROL"] = str(self.control)
        env["DISKFULL_LOG"] = str(self.log)
        return env

    def _write(self, text):
        # rename(2): the library sees the old rules or the new ones, never half a file.
        self._generation += 1
        temporary = self.directory / f".diskfull.control.{self._generation}"
        temporary.write_text(text)
        os.rename(temporary, self.control)

    def fail(self, *rules):
        """Each rule is (call, substring) or (call, substring, count); replaces the rules in force."""
        self._write("".join(" ".join(str(part) for part in rule) + "\n" for rule in rules))

    def clear(self):
        self._write("")
        if self.log.exists():
            self.log.unlink()

    def injected(self):
        """[(call, path)] of every failure injected since the last clear()."""
        if not self.log.exists():
            return []
        return [tuple(line.split(" ", 1)) for line in self.log.read_text().splitlines() if line]


def catalog_state(data_dir):
    """What a stopped (or killed) daemon left: {"rows": {id: sha256}, "events": [(id, type, data)],
    "files": {id}, "thumbnails": {id}, "leftovers": [names]}."""
    data_dir = Path(data_dir)
    connection = sqlite3.connect(f"file:{data_dir / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        rows = dict(connection.execute("SELECT id, sha256 FROM media WHERE offloaded = 0"))
        events = connection.execute("SELECT id, type, data FROM events ORDER BY id").fetchall()
    finally:
        connection.close()
    media = data_dir / "media"
    files, leftovers, thumbnails = set(), [], set()
    for name in os.listdir(media):
        if name.endswith(".jpg") and not name.startswith("."):
            files.add(int(name[:-4]))
        elif name != "thumbs":
            leftovers.append(name)
    thumbs = media / "thumbs"
    if thumbs.exists():
        for name in os.listdir(thumbs):
            if name.startswith("."):
                leftovers.append("thumbs/" + name)
            else:
                thumbnails.add(int(name.split("-", 1)[0]))
    return {"rows": rows, "events": events, "files": files, "thumbnails": thumbnails, "leftovers": leftovers}
