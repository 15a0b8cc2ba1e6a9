#!/usr/bin/env bash
# OpenBLAS sgemm against kiln's packed product on a Llama-1.1B layer's shapes
# (tools/bench/gemm_packed.cpp).
# Usage: gemm_packed.sh [threads] [GB of weight copies] [rows,rows,...]
set -euo pipefail
. "$(dirname "$0")/kernel_bench.sh"
kernel_bench gemm_packed
OPENBLAS_NUM_THREADS="${1:-2}" "$BENCH" "$@"
