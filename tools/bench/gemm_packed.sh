#!/usr/bin/env bash
# OpenBLAS sgemm against kiln's packed product on a Llama-1.1B layer's shapes
# (tools/bench/gemm_packed.cpp).
# Usage: gemm_packed.sh [threads] [GB of weight copies] [rows,rows,...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
k="$root/kernels/cpu"
g++ -O3 -march=x86-64-v2 -DNDEBUG -std=c++17 -I"$root" "$here/gemm_packed.cpp" \
  "$k/gemm.cpp" "$k/gemm_small_m.cpp" "$k/packed_gemm.cpp" "$k/packed_matrix.cpp" \
  "$k/parallel.cpp" "$k/cast.cpp" -o "$out/gemm_packed" $(pkg-config --cflags --libs openblas) -lpthread
OPENBLAS_NUM_THREADS="${1:-2}" "$out/gemm_packed" "$@"
