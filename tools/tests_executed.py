#!/usr/bin/env python3
"""Lists the tests a `make test` log shows CTest running, one line each:
configuration, status and name (docs/testing.md#what-runs-where).

    tools/tests_executed.py make-test.log > executed.txt
    tools/tests_executed.py --diff before.txt after.txt
    tools/tests_executed.py --table before.txt after.txt > docs/tests-executed.tsv

The configuration is the build folder of the `Test project` line above each
result. gtest's "# GetParam() = ..." suffix (which holds pointers) is cut, so
two runs compare by name. --diff prints the tests whose status changed per
name: gone from every configuration, or moved between configurations.
Exit code 0, or 2 when the log shows no test.
"""
import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

PROJECT = re.compile(r"^Test project (\S+)")
RESULT = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (.+?) \.{2,}\**\s*(\w[\w ]*?)\s+[\d.]+ sec")


def parse(log):
    config, rows = "?", []
    for line in log.splitlines():
        m = PROJECT.match(line)
        if m:
            config = Path(m.group(1)).name
            continue
        m = RESULT.match(line)
        if m:
            name = m.group(1).split("  # ")[0].strip()
            rows.append((config, m.group(2).split()[0], name))
    return sorted(set(rows))


def read_listing(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#"):
            config, status, name = line.split("\t", 2)
            rows.append((config, status, name))
    return rows


def where_run(rows):
    """name -> the configurations that ran it (a skip is not a run)."""
    where = defaultdict(set)
    for config, status, name in rows:
        where[name]  # a test only ever skipped is listed with no configuration
        if status != "Skipped":
            where[name].add(config)
    return where


def table(before, after):
    where_b, where_a = where_run(before), where_run(after)
    print("# test\tran before in\truns now in ('-': skipped or absent)")
    for name in sorted(set(where_b) | set(where_a)):
        b = ",".join(sorted(where_b.get(name, ()))) or "-"
        a = ",".join(sorted(where_a.get(name, ()))) or "-"
        print(f"{name}\t{b}\t{a}")


def diff(before, after):
    where_b = {n: c for n, c in where_run(before).items() if c}
    where_a = {n: c for n, c in where_run(after).items() if c}
    gone = sorted(n for n in where_b if n not in where_a)
    new = sorted(n for n in where_a if n not in where_b)
    fewer = sorted(n for n in where_b if n in where_a and where_b[n] - where_a[n])
    print(f"# run before: {len(where_b)} distinct tests; after: {len(where_a)}")
    print(f"# no longer run in any configuration: {len(gone)}")
    for n in gone:
        print(f"gone\t{','.join(sorted(where_b[n]))}\t{n}")
    print(f"# new: {len(new)}")
    for n in new:
        print(f"new\t{','.join(sorted(where_a[n]))}\t{n}")
    print(f"# still run, in fewer configurations: {len(fewer)}")
    for n in fewer:
        print(f"fewer\t{','.join(sorted(where_b[n]))} -> {','.join(sorted(where_a[n]))}\t{n}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log", nargs="?", help="the output of make test (or of ctest runs)")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="two listings this script wrote: what changed")
    ap.add_argument("--table", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="two listings: every test, where it ran before and where now")
    args = ap.parse_args()
    if args.diff:
        diff(read_listing(args.diff[0]), read_listing(args.diff[1]))
        return 0
    if args.table:
        table(read_listing(args.table[0]), read_listing(args.table[1]))
        return 0
    if not args.log:
        ap.error("a log, or --diff BEFORE AFTER")
    rows = parse(Path(args.log).read_text(errors="replace"))
    if not rows:
        print(f"{args.log}: no ctest result lines", file=sys.stderr)
        return 2
    counts = defaultdict(lambda: defaultdict(int))
    for config, status, _ in rows:
        counts[config][status] += 1
    for config in sorted(counts):
        print(f"# {config}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts[config].items())))
    for row in rows:
        print("\t".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
