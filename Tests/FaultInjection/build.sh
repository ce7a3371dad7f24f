#!/usr/bin/env bash
# Builds libdiskfull.so, the ENOSPC injector the fault tests load with LD_PRELOAD
# (Tests/e2e/faults.py). Usage: Tests/FaultInjection/build.sh [output-dir]
# (default: .build/faults in the repository). Prints the library's path. Nothing in
# Package.swift refers to it, so the daemon's own build never contains it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$(cd "$here/../.." && pwd)/.build/faults}"
mkdir -p "$OUT"
# Built under a temporary name and renamed, so a process loading the library meanwhile sees the
# old or the new file, never half of one.
temporary="$(mktemp "$OUT/.libdiskfull.XXXXXX")"
trap 'rm -f "$temporary"' EXIT
cc -shared -fPIC -O2 -Wall -Wextra -Werror -fvisibility=hidden -o "$temporary" "$here/diskfull.c" -lpthread -ldl
chmod 755 "$temporary"
mv -f "$temporary" "$OUT/libdiskfull.so"
echo "$OUT/libdiskfull.so"
