#!/usr/bin/env bash
# A decode step's products streamed from memory: f32, int8 widened, and int8 x
# int8 (tools/bench/gemm_decode_stream.cpp).
# Usage: gemm_decode_stream.sh [threads] [GB of weight copies] [rows] [avx2]
# (avx2: the int8 x int8 products through Int8GemmAvx2, the path of CPUs
# without AVX-512 VNNI, instead of the path this CPU takes)
set -euo pipefail
. "$(dirname "$0")/kernel_bench.sh"
kernel_bench gemm_decode_stream int8_gemm.cpp int8_gemm_avx2.cpp
"$BENCH" "$@"
