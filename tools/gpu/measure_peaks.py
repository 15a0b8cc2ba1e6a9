#!/usr/bin/env python3
"""The two ceilings of the card the benchmarks run on (docs/gpu.md).

usage: measure_peaks.py [--json FILE] [--device cuda] [--copy-gib GIB] [--gemm N]

  copy_gbps     a device-to-device copy of --copy-gib GiB, bytes read plus
                bytes written over the time: the rate a weight stream can reach
                (the bandwidth floor of a decode step is its bytes over this);
  gemm_tflops   a bf16 matrix product of --gemm cubed on random values (zeros
                run faster: METHOD.md beside the device tool), 2 n^3 over the
                time: the compute ceiling of a prefill.
Each is the median of 20 timed runs (CUDA events) after 3 warm-ups, so the
numbers are this card's, measured in the same call as the runs they divide.
run_8b.sh's `peaks` step writes WORK/peaks.json, and its later steps take
PEAK_GBPS and PEAK_TFLOPS from it when the environment does not set them.
Prints one line of JSON and writes it to --json. With --device cpu (a dry
run) the timings are the host's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def timed(fn, device: str, torch, warmups: int = 3, runs: int = 20) -> float:
    """Median seconds of fn() over `runs` runs after `warmups`."""
    for _ in range(warmups):
        fn()
    times = []
    for _ in range(runs):
        if device.startswith("cuda"):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the result here")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--copy-gib", type=float, help="default 4 (0.25 on the cpu)")
    ap.add_argument("--gemm", type=int, help="default 8192 (1024 on the cpu)")
    a = ap.parse_args()
    cuda = a.device.startswith("cuda")
    if a.copy_gib is None:
        a.copy_gib = 4.0 if cuda else 0.25
    if a.gemm is None:
        a.gemm = 8192 if cuda else 1024
    if a.copy_gib <= 0 or a.gemm <= 0:
        print("measure_peaks.py: --copy-gib and --gemm must be positive", file=sys.stderr)
        return 2
    import torch

    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("measure_peaks.py: torch sees no CUDA device", file=sys.stderr)
        return 1
    n = int(a.copy_gib * (1 << 30)) // 4
    src = torch.rand(n, device=a.device, dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_s = timed(lambda: dst.copy_(src), a.device, torch)
    if not torch.equal(dst, src):
        print("measure_peaks.py: the copy is wrong", file=sys.stderr)
        return 1
    del src, dst
    m = a.gemm
    dtype = torch.bfloat16 if a.device.startswith("cuda") else torch.float32
    x = torch.randn(m, m, device=a.device, dtype=dtype)
    y = torch.randn(m, m, device=a.device, dtype=dtype)
    gemm_s = timed(lambda: torch.mm(x, y), a.device, torch)
    result = {
        "device": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu",
        "copy_bytes": 2 * 4 * n,
        "copy_s": copy_s,
        "copy_gbps": 2 * 4 * n / copy_s / 1e9,
        "gemm_n": m,
        "gemm_dtype": str(dtype).replace("torch.", ""),
        "gemm_s": gemm_s,
        "gemm_tflops": 2 * m ** 3 / gemm_s / 1e12,
    }
    line = json.dumps(result)
    print(line)
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
