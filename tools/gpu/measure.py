#!/usr/bin/env python3
"""Runs a command and reports its wall time and peak resident memory.

usage: measure.py [--json FILE] -- COMMAND [ARG...]

The peak is the largest resident set of the command or any process it waited
for (getrusage(RUSAGE_CHILDREN).ru_maxrss), so no /usr/bin/time is needed.
Prints "wall S s, peak RSS M MiB" to stderr, writes {"wall_s", "peak_rss_mib",
"returncode", "command"} to --json, and exits with the command's status.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    out = None
    if args[:1] == ["--json"]:
        out, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    t0 = time.monotonic()
    rc = subprocess.call(args)
    wall = time.monotonic() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    print(f"wall {wall:.1f} s, peak RSS {peak_mib:.0f} MiB (exit {rc}): {' '.join(args)}",
          file=sys.stderr)
    if out:
        with open(out, "w") as f:
            json.dump({"wall_s": round(wall, 2), "peak_rss_mib": round(peak_mib),
                       "returncode": rc, "command": args}, f)
            f.write("\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
