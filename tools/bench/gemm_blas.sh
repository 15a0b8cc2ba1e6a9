#!/usr/bin/env bash
# Measures OpenBLAS against oneDNN sgemm (needs libopenblas-dev and libdnnl-dev).
set -euo pipefail
out=$(mktemp -d)
g++ -O2 -std=c++17 "$(dirname "$0")/gemm_blas.cpp" -o "$out/gemm_blas" \
  $(pkg-config --cflags --libs openblas) -ldnnl
"$out/gemm_blas"
