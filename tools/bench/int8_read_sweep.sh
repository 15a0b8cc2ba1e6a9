#!/usr/bin/env bash
# Int8Gemm's one-row product beside plain reads of the same packed panels
# (tools/bench/int8_read_sweep.cpp): how close the decode product is to the
# machine's read rate. Needs AVX-512.
# Usage: int8_read_sweep.sh [K] [N] [rounds]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
k="$root/kernels/cpu"
g++ -O3 -march=x86-64-v2 -DNDEBUG -std=c++17 -I"$root" "$here/int8_read_sweep.cpp" \
  "$k/gemm.cpp" "$k/gemm_small_m.cpp" "$k/packed_gemm.cpp" "$k/packed_matrix.cpp" \
  "$k/parallel.cpp" "$k/cast.cpp" "$k/int8_gemm.cpp" "$k/int8_gemm_avx2.cpp" -o "$out/int8_read_sweep" \
  $(pkg-config --cflags --libs openblas) -lpthread
"$out/int8_read_sweep" "$@"
