#!/usr/bin/env python3
"""A CUDA-enabled kiln without cuBLASLt and NCCL (runtime/src/backends/cuda/lazy_library.h).

    cuda_libraries.py --kiln KILN PLAN

Checks, on a machine with or without a GPU:
  - kiln does not link libcublasLt or libnccl (readelf: no NEEDED entry);
  - with KILN_CUBLASLT_LIBRARY naming a missing file, `kiln run --device cuda`
    fails with one message naming cuBLASLt, the variable and the file (exit
    status 2, as for a missing device; no crash), and `kiln run --device cpu`
    still runs;
  - without it, the CUDA backend's error, if any, is not about cuBLASLt (the
    toolkit's library loads: on a machine with no GPU the error is the
    device's).
"""
import argparse
import os
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plan")
    args = ap.parse_args()

    r = run(["readelf", "-d", args.kiln])
    check(r.returncode == 0, f"readelf -d {args.kiln}")
    needed = [l for l in r.stdout.splitlines() if "(NEEDED)" in l]
    check(len(needed) > 0, f"readelf lists kiln's libraries ({len(needed)})")
    for lib in ("libcublasLt", "libnccl", "libcublas."):
        check(not any(lib in l for l in needed), f"kiln does not link {lib}")

    gen = ["--prompt-ids", "1,2,3", "--max-new-tokens", "2", "--temperature", "0", "--no-stream"]
    missing = "/kiln-no-such-dir/libcublasLt.so.13"
    env = dict(os.environ, KILN_CUBLASLT_LIBRARY=missing)
    r = run([args.kiln, "run", args.plan, "--device", "cuda", *gen], env)
    print(r.stderr.strip()[-600:])
    check(r.returncode == 2,
          f"--device cuda without cuBLASLt exits 2, as without a device (got {r.returncode})")
    for part in ("cuBLASLt could not be loaded", "KILN_CUBLASLT_LIBRARY", missing):
        check(part in r.stderr, f"its message names {part!r}")
    r = run([args.kiln, "run", args.plan, "--device", "cpu", *gen], env)
    check(r.returncode == 0, f"--device cpu runs without cuBLASLt (exit {r.returncode})")
    if r.returncode != 0:
        print(r.stderr[-1500:])

    env = {k: v for k, v in os.environ.items() if k != "KILN_CUBLASLT_LIBRARY"}
    r = run([args.kiln, "run", args.plan, "--device", "cuda", *gen], env)
    if r.returncode != 0:
        print(r.stderr.strip()[-600:])
    check("could not be loaded" not in r.stderr,
          f"the toolkit's cuBLASLt loads (exit {r.returncode}, no library error)")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
