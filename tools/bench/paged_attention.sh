#!/usr/bin/env bash
# Paged attention on a Llama-1.1B layer's shapes (tools/bench/paged_attention.cpp).
# Usage: paged_attention.sh [threads]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
k="$root/kernels/cpu"
g++ -O3 -march=x86-64-v2 -std=c++17 -I"$root" "$here/paged_attention.cpp" \
  "$k/paged_attention.cpp" "$k/cast.cpp" "$k/fast_math.cpp" "$k/softmax.cpp" "$k/gemm.cpp" \
  "$k/gemm_small_m.cpp" "$k/packed_gemm.cpp" "$k/packed_matrix.cpp" "$k/parallel.cpp" \
  -o "$out/paged_attention" $(pkg-config --cflags --libs openblas) -lpthread
OPENBLAS_NUM_THREADS="${1:-2}" "$out/paged_attention" "$@"
