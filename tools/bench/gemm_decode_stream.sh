#!/usr/bin/env bash
# A decode step's products streamed from memory: f32, int8 widened, and int8 x
# int8 (tools/bench/gemm_decode_stream.cpp).
# Usage: gemm_decode_stream.sh [threads] [GB of weight copies] [rows] [avx2]
# (avx2: the int8 x int8 products through Int8GemmAvx2, the path of CPUs
# without AVX-512 VNNI, instead of the path this CPU takes)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
k="$root/kernels/cpu"
g++ -O3 -march=x86-64-v2 -DNDEBUG -std=c++17 -I"$root" "$here/gemm_decode_stream.cpp" \
  "$k/gemm.cpp" "$k/gemm_small_m.cpp" "$k/packed_gemm.cpp" "$k/packed_matrix.cpp" \
  "$k/parallel.cpp" "$k/cast.cpp" "$k/int8_gemm.cpp" "$k/int8_gemm_avx2.cpp" -o "$out/gemm_decode_stream" \
  $(pkg-config --cflags --libs openblas) -lpthread
"$out/gemm_decode_stream" "$@"
