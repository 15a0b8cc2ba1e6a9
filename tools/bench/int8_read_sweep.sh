#!/usr/bin/env bash
# Int8Gemm's one-row product beside plain reads of the same packed panels
# (tools/bench/int8_read_sweep.cpp): how close the decode product is to the
# machine's read rate. Needs AVX-512.
# Usage: int8_read_sweep.sh [K] [N] [rounds]
set -euo pipefail
. "$(dirname "$0")/kernel_bench.sh"
kernel_bench int8_read_sweep int8_gemm.cpp int8_gemm_avx2.cpp
"$BENCH" "$@"
