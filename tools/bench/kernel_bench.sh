# Sourced by the kernel benchmarks' scripts: kernel_bench NAME [FILE.cpp ...]
# compiles tools/bench/NAME.cpp with the CPU product kernels (and any other
# kernels/cpu files named) into a temporary folder removed at exit, and sets
# BENCH to the program's path.
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bench_root=$(cd "$bench_dir/../.." && pwd)
bench_out=$(mktemp -d)
trap 'rm -rf "$bench_out"' EXIT

kernel_bench() {
  local name=$1 k="$bench_root/kernels/cpu" extra=()
  shift
  for f in "$@"; do extra+=("$k/$f"); done
  g++ -O3 -march=x86-64-v2 -DNDEBUG -std=c++17 -I"$bench_root" "$bench_dir/$name.cpp" \
    "$k/gemm.cpp" "$k/gemm_small_m.cpp" "$k/packed_gemm.cpp" "$k/packed_matrix.cpp" \
    "$k/parallel.cpp" "$k/cast.cpp" "${extra[@]}" -o "$bench_out/$name" \
    $(pkg-config --cflags --libs openblas) -lpthread
  BENCH="$bench_out/$name"
}
