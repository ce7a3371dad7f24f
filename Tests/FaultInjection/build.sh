#!/usr/bin/env bash
# Builds the fault tests' preloaded libraries (Tests/e2e/faults.py): libdiskfull.so, the ENOSPC
# injector, libmonotonictimers.so, which keeps monotonic timers steady under libfaketime, and
# libexithandlers.so, which records the handlers libraries register to run at exit.
# Usage: Tests/FaultInjection/build.sh [output-dir] (default: .build/faults in the repository).
# Prints the libraries' paths. Nothing in
# Package.swift refers to it, so the daemon's own build never contains it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
OUT="${1:-$(cd "$here/../.." && pwd)/.build/faults}"
mkdir -p "$OUT"
# Each is built under a temporary name and renamed, so a process loading it meanwhile sees the
# old or the new file, never half of one.
build() {
    local source="$1" library="$2" temporary
    temporary="$(mktemp "$OUT/.$library.XXXXXX")"
    if ! cc -shared -fPIC -O2 -Wall -Wextra -Werror -fvisibility=hidden -o "$temporary" "$here/$source" \
        -lpthread -ldl; then
        rm -f "$temporary"
        return 1
    fi
    chmod 755 "$temporary"
    mv -f "$temporary" "$OUT/$library"
    echo "$OUT/$library"
}
build diskfull.c libdiskfull.so
build monotonic_timers.c libmonotonictimers.so
build exit_handlers.c libexithandlers.so
