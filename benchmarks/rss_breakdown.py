#!/usr/bin/env python3
"""Issue 5: where the resident memory goes, shutterd against ustreamer, side by side.

Each server is started exactly as benchmarks/preview_bench.py starts it (the emulated camera,
MJPEG 1280x720 at 30 fps, passed through), left for --settle seconds, then, with --viewers N,
watched by N viewers (benchmarks/mjpeg_viewers.c) for --seconds; /proc/PID/smaps is read at rest
and again in the middle of the viewing window. Every mapping's Rss is added up by what backs it:
a file (the binary, each shared library, by base name) or anonymous memory (the heap and
malloc's arenas, thread stacks, everything else without a file), so the table says which
library or region each MiB belongs to. VmHWM (peak RSS, what preview_bench.py reports) is shown
under it.

--by-module also splits the resident pages of the shutterd binary itself (/proc/PID/pagemap)
by what they hold: each page's bytes go to the symbols in it, a Swift symbol to the module its
mangled name names (the standard library, FoundationEssentials, _StringProcessing, each of ours),
the runtime's C and C++ to "Swift runtime", and bytes no symbol covers to their ELF section. It
says what linking the Swift runtime statically (scripts/install) leaves resident, and who for.

Usage: benchmarks/rss_breakdown.py [--viewers 100] [--settle 3] [--seconds 6]
       [--servers ustreamer,shutterd] [--shutterd PATH] [--label NAME=PATH ...] [--by-module]
       [--json out.json]
--label adds another shutterd binary as a column (e.g. the --static-swift-stdlib build that
scripts/install installs: --label static=.build/static/release/shutterd).
"""

import argparse
import bisect
import json
import os
import re
import subprocess
import sys
import struct
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import preview_bench  # noqa: E402

MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$")


def smaps_by_backing(pid):
    """{region: KiB of Rss}: file mappings by base name, anonymous ones by kind."""
    regions = {}
    current = None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            match = MAPPING.match(line)
            if match:
                perms, path = match.groups()
                if not path:
                    current = "anonymous (heap arenas, thread stacks, mmaps)"
                elif path.startswith("["):
                    current = {"[heap]": "anonymous (brk heap)", "[stack]": "anonymous (main stack)"}.get(
                        path, path)
                elif path.startswith("/memfd:") or path.startswith("/dev/"):
                    current = path.split(" ")[0]
                else:
                    name = os.path.basename(path.split(" ")[0])
                    # The writable part of a library (data, GOT, relocated metadata) is private
                    # dirty memory the loader wrote: shown apart from its read-only pages.
                    current = name + (" (writable)" if "w" in perms else "")
                continue
            if line.startswith("Rss:") and current is not None:
                regions[current] = regions.get(current, 0) + int(line.split()[1])
    return regions


PAGE = os.sysconf("SC_PAGE_SIZE")
SWIFT_MODULE = re.compile(r"^\$s(\d+)")


def symbol_owner(name):
    """Who a symbol belongs to, from its (mangled) name."""
    if name.startswith("$s"):
        match = SWIFT_MODULE.match(name)
        if match:
            length = int(match.group(1))
            start = match.end()
            module = name[start:start + length]
            return "Swift: " + ("our modules (Shutter*, shutterd)" if module.startswith(("Shutter", "shutterd"))
                                else module)
        return "Swift: standard library (Swift, _Concurrency)"  # $ss..., $sS<type>...: the stdlib's own
    if name.startswith(("swift_", "_swift_", "_ZN5swift", "_ZL", "_ZNK5swift", "$ss")):
        return "Swift runtime (C++)"
    if name.startswith(("dispatch_", "_dispatch", "_os_", "DISPATCH")):
        return "libdispatch (linked in)"
    if name.startswith(("_ZNSt", "_ZSt", "_ZNKSt", "_ZN9__gnu_cxx", "_ZN4llvm")):
        return "C++ library code (inlined in the runtime)"
    return "C (our targets and the runtime's C)"


def elf_sections(path):
    """[(start, end, name)] of the allocated sections, by ELF address."""
    out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, check=True).stdout
    sections = []
    for line in out.splitlines():
        match = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s+(\S*)", line)
        if match and "A" in match.group(5):
            address, size = int(match.group(2), 16), int(match.group(4), 16)
            if size:
                sections.append((address, address + size, match.group(1)))
    return sorted(sections)


def elf_symbols(path):
    """Sorted [(start, end, owner)] of the sized symbols."""
    out = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    symbols = []
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[1] and int(parts[1], 16):
            start = int(parts[0], 16)
            symbols.append((start, start + int(parts[1], 16), symbol_owner(parts[3])))
    symbols.sort()
    return symbols


def binary_pages_by_owner(pid, path):
    """{owner: KiB} of the resident pages of `path` mapped in `pid`, split by symbol and section."""
    mappings = []
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == os.path.realpath(path):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                mappings.append((start, end, int(fields[2], 16)))
    # A position-independent binary: the mapping of file offset 0 is at the load bias.
    bias = min(start - offset for start, _, offset in mappings)
    sections, symbols = elf_sections(path), elf_symbols(path)
    starts = [s[0] for s in symbols]
    owners = {}
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for start, end, _ in mappings:
            pagemap.seek(start // PAGE * 8)
            entries = pagemap.read((end - start) // PAGE * 8)
            for index in range((end - start) // PAGE):
                (entry,) = struct.unpack_from("<Q", entries, index * 8)
                if not entry >> 63 & 1:  # not present
                    continue
                page = start + index * PAGE - bias
                covered = 0
                i = max(bisect.bisect_right(starts, page) - 1, 0)
                # Symbols may nest (a section's start symbol): step back while they still reach in.
                while i > 0 and symbols[i - 1][1] > page:
                    i -= 1
                while i < len(symbols) and symbols[i][0] < page + PAGE:
                    low, high = max(symbols[i][0], page, page + covered), min(symbols[i][1], page + PAGE)
                    if high > low:
                        owners[symbols[i][2]] = owners.get(symbols[i][2], 0) + (high - low)
                        covered = high - page
                    i += 1
                rest = PAGE - covered
                if rest > 0:
                    section = next((name for low, high, name in sections if low <= page < high), "(no section)")
                    key = f"section {section} (no symbol)"
                    owners[key] = owners.get(key, 0) + rest
    return {owner: size / 1024 for owner, size in owners.items()}


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rollup(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as smaps:
        for line in smaps:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1])
    return values


def measure(name, binary, viewers, settle, seconds, by_module=False):
    preview_bench.SHUTTERD = binary or preview_bench.SHUTTERD
    server = preview_bench.Server("ustreamer" if name == "ustreamer" else "shutterd")
    try:
        time.sleep(settle)
        pid = server.process.pid
        at_rest = {"regions": smaps_by_backing(pid), "rollup": rollup(pid)}
        if by_module and name != "ustreamer":
            at_rest["binary_by_owner"] = binary_pages_by_owner(pid, os.readlink(f"/proc/{pid}/exe"))
        loaded = None
        if viewers:
            client = subprocess.Popen(
                [preview_bench.CLIENT, "--port", str(server.port), "--path", server.path,
                 "--viewers", str(viewers), "--seconds", str(seconds), "--warmup", "1",
                 "--fps", str(preview_bench.FPS), "--pid", str(pid)],
                stdout=subprocess.PIPE, text=True)
            time.sleep(1 + seconds / 2)
            loaded = {"regions": smaps_by_backing(pid), "rollup": rollup(pid)}
            out, _ = client.communicate(timeout=seconds + 60)
            loaded["client"] = json.loads(out)
        hwm = status_kib(pid, "VmHWM")
    finally:
        server.stop()
    return {"name": name, "at_rest": at_rest, "loaded": loaded, "hwm_kib": hwm}


def mib(kib):
    return f"{kib / 1024:.2f}"


def print_table(results, phase):
    columns = [r for r in results if r[phase]]
    if not columns:
        return
    names = sorted({k for r in columns for k in r[phase]["regions"]},
                   key=lambda k: -max(r[phase]["regions"].get(k, 0) for r in columns))
    print(f"\n{phase.replace('_', ' ')}: Rss MiB by what backs it")
    print("| region | " + " | ".join(r["name"] for r in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for key in names:
        cells = [r[phase]["regions"].get(key, 0) for r in columns]
        if max(cells) < 50:  # under 50 KiB everywhere: summed below
            continue
        print(f"| {key} | " + " | ".join(mib(c) if c else "" for c in cells) + " |")
    small = [sum(v for k, v in r[phase]["regions"].items()
                 if max(c[phase]["regions"].get(k, 0) for c in columns) < 50) for r in columns]
    print("| everything under 0.05 MiB | " + " | ".join(mib(s) for s in small) + " |")
    for field, label in (("Rss", "total Rss"), ("Anonymous", "of which anonymous"),
                         ("Private_Dirty", "of which private dirty"), ("Pss", "Pss (shared pages divided)")):
        print(f"| **{label}** | " + " | ".join(mib(r[phase]["rollup"].get(field, 0)) for r in columns) + " |")
    if phase == "loaded":
        print("| **VmHWM (peak, as preview_bench.py reports)** | "
              + " | ".join(mib(r["hwm_kib"]) for r in columns) + " |")
        print("| slowest viewer's fps | " + " | ".join(f"{r['loaded']['client']['fps']['min']:.1f}"
                                                      for r in columns) + " |")


def print_owners(results):
    columns = [r for r in results if r["at_rest"].get("binary_by_owner")]
    if not columns:
        return
    owners = sorted({k for r in columns for k in r["at_rest"]["binary_by_owner"]},
                    key=lambda k: -max(r["at_rest"]["binary_by_owner"].get(k, 0) for r in columns))
    print("\nat rest: the binary's own resident pages (shutterd above), MiB by whose code or data they hold")
    print("| owner | " + " | ".join(r["name"] for r in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for key in owners:
        cells = [r["at_rest"]["binary_by_owner"].get(key, 0) for r in columns]
        if max(cells) >= 20:
            print(f"| {key} | " + " | ".join(f"{c / 1024:.2f}" for c in cells) + " |")
    small = [sum(v for k, v in r["at_rest"]["binary_by_owner"].items()
                 if max(c["at_rest"]["binary_by_owner"].get(k, 0) for c in columns) < 20) for r in columns]
    print("| everything under 0.02 MiB | " + " | ".join(f"{s / 1024:.2f}" for s in small) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--viewers", type=int, default=100)
    parser.add_argument("--settle", type=float, default=3)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--servers", default="ustreamer,shutterd")
    parser.add_argument("--shutterd", default=preview_bench.SHUTTERD)
    parser.add_argument("--label", action="append", default=[], help="NAME=PATH: one more shutterd binary")
    parser.add_argument("--by-module", action="store_true", help="split the binary's own pages by symbol")
    parser.add_argument("--json")
    args = parser.parse_args()
    preview_bench.build_client()
    plan = [(name, args.shutterd if name == "shutterd" else None) for name in args.servers.split(",")]
    plan += [tuple(item.split("=", 1)) for item in args.label]
    results = [measure(name, binary, args.viewers, args.settle, args.seconds, args.by_module)
               for name, binary in plan]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    print_table(results, "at_rest")
    print_owners(results)
    print_table(results, "loaded")


if __name__ == "__main__":
    main()
