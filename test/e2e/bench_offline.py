#!/usr/bin/env python3
"""`kiln bench offline`: numbers that add up, JSON, requests file and PNG.

    bench_offline.py --kiln build/tools/kiln/kiln PLAN

Runs a small benchmark (8 requests of 12 prompt + 6 new tokens at
concurrency 1 and 8) and checks the JSON's counts, rates (output and total)
and percentiles, the KV cache's size, that
concurrency 1 takes one step per token and 8 shares steps, the requests
file, the PNG (signature, chunk CRCs, the image data inflates to its size,
something is drawn), and that bad arguments exit 2 with a message.
"""
import argparse
import json
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def png_pixels(data):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG; checks CRCs."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "PNG signature"
    at, idat, size = 8, b"", None
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        crc, = struct.unpack(">I", data[at + 8 + n:at + 12 + n])
        assert zlib.crc32(kind + body) == crc, f"CRC of {kind}"
        if kind == b"IHDR":
            size = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    w, h, depth, color = size
    assert depth == 8 and color == 2, "8-bit RGB"
    raw = zlib.decompress(idat)
    assert len(raw) == h * (w * 3 + 1), "image data size"
    return w, h, [raw[y * (w * 3 + 1) + 1:(y + 1) * (w * 3 + 1)] for y in range(h)]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        peer = tmp / "peer.json"
        peer.write_text(json.dumps({"results": [{"concurrency": 1, "output_tokens_per_s": 100.0}]}))
        cmd = [args.kiln, "bench", "offline", args.plan, "--num-prompts", "8", "--input-len", "12",
               "--output-len", "6", "--concurrency", "1,8", "--json", str(tmp / "b.json"),
               "--write-requests", str(tmp / "r.jsonl"), "--plot", str(tmp / "b.png"),
               "--peer-json", str(peer)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, f"bench exit {r.returncode} {r.stderr[-300:]}")
        check("| concurrency | req/s | out tok/s | total tok/s | TTFT p50 ms" in r.stdout and
              "| KV tokens | 2k seqs |" in r.stdout, "prints the table")
        doc = json.loads((tmp / "b.json").read_text())
        levels = {x["concurrency"]: x for x in doc["results"]}
        check(sorted(levels) == [1, 8], f"levels {sorted(levels)}")
        for c, x in levels.items():
            check(x["requests"] == 8 and x["output_tokens"] == 48, f"c={c}: 8 requests, 48 tokens")
            check(x["requests_per_s"] > 0 and abs(x["output_tokens_per_s"] - 48 / x["wall_s"]) < 1e-6 * x["output_tokens_per_s"] + 1e-9,
                  f"c={c}: tokens/s is tokens over wall time")
            check(x["prompt_tokens"] == 96 and abs(x["total_tokens_per_s"] - 144 / x["wall_s"]) <
                  1e-6 * x["total_tokens_per_s"], f"c={c}: total tokens/s is 96 prompt + 48 output over wall time")
            check(x["kv_cache_tokens"] > 0 and x["kv_cache_seqs_2k"] == x["kv_cache_tokens"] // 2048,
                  f"c={c}: the KV cache in tokens and 2k sequences")
            check(0 <= x["ttft_ms_p50"] <= x["ttft_ms_p99"] and 0 <= x["tpot_ms_p50"] <= x["tpot_ms_p99"],
                  f"c={c}: p50 <= p99")
        check(levels[1]["steps"] == 48, f"c=1: one step per token ({levels[1]['steps']})")
        check(levels[8]["steps"] < 48, f"c=8: shared steps ({levels[8]['steps']})")
        reqs = [json.loads(x) for x in (tmp / "r.jsonl").read_text().splitlines()]
        check(len(reqs) == 8 and all(len(q["prompt_ids"]) == 12 and q["max_new_tokens"] == 6 for q in reqs),
              "requests file: 8 requests of 12 ids and 6 new tokens")
        w, h, rows = png_pixels((tmp / "b.png").read_bytes())
        blue = sum(row.count(bytes([0x1f, 0x77, 0xb4])) for row in rows)
        red = sum(row.count(bytes([0xd6, 0x27, 0x28])) for row in rows)
        check(w > 100 and h > 100 and blue > 50 and red > 50,
              f"PNG {w}x{h} with the series ({blue} px) and the peer level ({red} px)")
        for bad, why in [(["--concurrency", "0"], "--concurrency"),
                         (["--num-prompts", "x"], "--num-prompts"),
                         (["--peer-json", str(tmp / "missing.json"), "--plot", str(tmp / "x.png")], "--peer-json")]:
            # Refused before anything runs (the default benchmark would take minutes).
            r = subprocess.run([args.kiln, "bench", "offline", args.plan, *bad], capture_output=True,
                               text=True, timeout=120)
            check(r.returncode == 2 and why in r.stderr, f"{' '.join(bad)}: exit {r.returncode}, {r.stderr.strip()[:120]}")
        r = subprocess.run([args.kiln, "bench", "offline", str(tmp / "none.plan")], capture_output=True, text=True)
        check(r.returncode == 2 and "none.plan" in r.stderr, f"missing plan: exit {r.returncode}")
    print(f"\nbench_offline: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
