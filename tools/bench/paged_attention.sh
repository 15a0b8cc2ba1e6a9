#!/usr/bin/env bash
# Paged attention on a Llama-1.1B layer's shapes (tools/bench/paged_attention.cpp).
# Usage: paged_attention.sh [threads]
set -euo pipefail
. "$(dirname "$0")/kernel_bench.sh"
kernel_bench paged_attention paged_attention.cpp fast_math.cpp softmax.cpp
OPENBLAS_NUM_THREADS="${1:-2}" "$BENCH" "$@"
