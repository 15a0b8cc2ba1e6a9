#!/usr/bin/env bash
# Builds the GPU bundle (docs/gpu.md): kiln (compiler and runtime, with the
# CUDA backend where nvcc is found) and the test programs test/gpu/bundle.txt
# names (and, with CUDA, the benchmark kiln_gemv_bench), linked with
# KILN_PORTABLE=ON (cmake/KilnPortable.cmake), stripped, with the shared
# libraries they need that are not glibc's or CUDA's in lib/;
# packed as build/gpu-bundle.tar.xz, which unpacks to gpu-bundle/{bin,lib}.
# Then it checks the packed copy: unpacked in a clean folder, every program's
# libraries resolve with no LD_LIBRARY_PATH to glibc, CUDA or the bundle's
# lib/, and its kiln builds the llama-optimum fixture (BUNDLE_CHECK=0 skips
# the build).
#
# usage: tools/gpu/build_bundle.sh
# Environment: BUNDLE_TARGETS (the programs, space-separated; default kiln,
# bundle.txt's and the benchmarks: "kiln" alone makes a bundle small enough to
# travel beside the whole checkout, fixtures included, for the fixtures
# suite), JOBS (default 2), BUILD_DIR (default build/portable),
# OUT (default build/gpu-bundle.tar.xz), KILN_CUDA (default ON where nvcc is
# found, else OFF), XZ_LEVEL (default --lzma2=preset=9e,dict=384MiB: a dictionary that spans every program, which share most of their bytes), BUNDLE_CHECK (default 1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
BUILD_DIR=${BUILD_DIR:-build/portable}
OUT=${OUT:-build/gpu-bundle.tar.xz}
XZ_LEVEL=${XZ_LEVEL:---lzma2=preset=9e,dict=384MiB}
NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -z "${KILN_CUDA:-}" ]; then
  if [ -x "$NVCC" ]; then KILN_CUDA=ON; else KILN_CUDA=OFF; fi
fi
CUDA_FLAGS=()
if [ "$KILN_CUDA" = ON ]; then CUDA_FLAGS=(-DCMAKE_CUDA_COMPILER="$NVCC"); fi

# The targets: kiln, then bundle.txt's (one a line, '#' starts a comment).
TARGETS=(kiln)
while read -r target _; do
  case $target in ''|'#'*) continue ;; esac
  TARGETS+=("$target")
done <test/gpu/bundle.txt
# Kernel benchmarks carried beside them, CUDA builds only (not tests: in bin/
# but not bundle.txt, so test_gpu.sh does not run them; docs/gpu.md says how).
if [ "$KILN_CUDA" = ON ]; then TARGETS+=(kiln_prefill_bench kiln_decode_bench kiln_gemv_bench); fi
if [ -n "${BUNDLE_TARGETS:-}" ]; then read -r -a TARGETS <<<"$BUNDLE_TARGETS"; fi

echo "== configure $BUILD_DIR (KILN_PORTABLE=ON, KILN_CUDA=$KILN_CUDA)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_PORTABLE=ON \
  -DKILN_BUILD_TESTS=ON -DKILN_CUDA="$KILN_CUDA" "${CUDA_FLAGS[@]}" >/dev/null
echo "== build ${TARGETS[*]}"
cmake --build "$BUILD_DIR" -j "$JOBS" --target "${TARGETS[@]}"

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/kiln-bundle.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/gpu-bundle/bin" "$STAGE/gpu-bundle/lib"
for target in "${TARGETS[@]}"; do
  # Ninja names each target's output; the executable is the one file of that name.
  bin=$(find "$BUILD_DIR" -name "$target" -type f -perm -u+x -not -path '*/CMakeFiles/*' -print -quit)
  if [ -z "$bin" ]; then
    echo "build_bundle.sh: no executable $target in $BUILD_DIR" >&2
    exit 1
  fi
  cp "$bin" "$STAGE/gpu-bundle/bin/$target"
  strip --strip-all "$STAGE/gpu-bundle/bin/$target"
done

# System libraries every glibc machine has, and CUDA's and NCCL's, which come
# from the GPU machine (its driver, toolkit and NCCL; NCCL alone is 200 MiB):
# the rest travels in lib/.
HOST_LIBS='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libutil|libcuda|libcublas|libcublasLt|libnccl|libnvidia-[a-z-]*)\.so'
for bin in "$STAGE"/gpu-bundle/bin/*; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ ! $name =~ $HOST_LIBS ]]; then
    cp -L "$path" "$STAGE/gpu-bundle/lib/$name"
    strip --strip-unneeded "$STAGE/gpu-bundle/lib/$name"
  fi
done
git rev-parse HEAD >"$STAGE/gpu-bundle/COMMIT" 2>/dev/null || true

mkdir -p "$(dirname "$OUT")"
echo "== pack $OUT (xz $XZ_LEVEL)"
tar -C "$STAGE" -cf - gpu-bundle | xz "$XZ_LEVEL" -T "$JOBS" >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "== sizes (stripped, unpacked)"
(cd "$STAGE/gpu-bundle" && du -b bin/* lib/* | sort -rn | awk '{printf "%10.1f MiB  %s\n", $1 / 1048576, $2}')
printf '%10.1f MiB  unpacked in all\n' "$(du -sb "$STAGE/gpu-bundle" | awk '{print $1 / 1048576}')"
printf '%10.1f MiB  %s\n' "$(stat -c %s "$OUT" | awk '{print $1 / 1048576}')" "$OUT"

# The check, on the packed copy, in a clean folder with a scrubbed environment.
CHECK=$(readlink -f "$STAGE")/check
mkdir -p "$CHECK"
tar -C "$CHECK" -xJf "$OUT"
bad=0
for bin in "$CHECK"/gpu-bundle/bin/*; do
  while read -r name path; do
    [ -e "$path" ] && path=$(readlink -f "$path")
    case $path in
      "$CHECK"/gpu-bundle/lib/*) ;;
      'not') [[ $name =~ ^(libcu|libnccl) ]] || { echo "  $(basename "$bin"): $name not found" >&2; bad=1; } ;;
      *) [[ $name =~ $HOST_LIBS ]] || { echo "  $(basename "$bin"): $name from $path" >&2; bad=1; } ;;
    esac
  done < <(env -i PATH=/usr/bin:/bin ldd "$bin" | awk '$2 == "=>" {print $1, $3}')
done
if [ "$bad" != 0 ]; then
  echo "build_bundle.sh: a bundled program needs a library the bundle does not carry" >&2
  exit 1
fi
echo "== check: every program resolves to glibc, CUDA or the bundle's lib/"
if [ "${BUNDLE_CHECK:-1}" != 0 ]; then
  (cd "$CHECK" && env -i PATH=/usr/bin:/bin HOME="$CHECK" gpu-bundle/bin/kiln build \
    "$ROOT/test/fixtures/llama-optimum/model.onnx" -o "$CHECK/llama.plan" --quiet)
  echo "== check: the unpacked kiln built test/fixtures/llama-optimum ($(stat -c %s "$CHECK/llama.plan") bytes)"
fi
