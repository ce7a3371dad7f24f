#!/usr/bin/env bash
# Builds libemucam.so, the emulated UVC webcam that tests and benchmarks load with LD_PRELOAD.
# Usage: Tests/EmulatedCamera/build.sh [output-dir]   (default: .build/emucam in the repository)
# Prints the library's path. Nothing in Package.swift refers to it, so the daemon's own build
# never contains it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$(cd "$here/../.." && pwd)/.build/emucam}"
mkdir -p "$OUT"
# Built under a temporary name and renamed, so a process loading the library meanwhile sees
# the old or the new file, never half of one.
temporary="$(mktemp "$OUT/.libemucam.XXXXXX")"
trap 'rm -f "$temporary"' EXIT
# -fvisibility=hidden: only the interposed libc functions (EMU_EXPORT) leave the library.
cc -shared -fPIC -O2 -Wall -Wextra -Werror -fvisibility=hidden \
    -o "$temporary" \
    "$here/interpose.c" "$here/device.c" "$here/controls.c" "$here/frames.c" "$here/knobs.c" \
    -lturbojpeg -lpthread -ldl
chmod 755 "$temporary"
mv -f "$temporary" "$OUT/libemucam.so"
echo "$OUT/libemucam.so"
