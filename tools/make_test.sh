#!/usr/bin/env bash
# `make test` (what .ci/run calls): both configurations built and tested, then
# the fuzz targets, each phase timed. docs/testing.md says what each build is
# for and which tests run where.
#
#   build/ci-asan     clang-19, compiler on, ASan+UBSan and libFuzzer hooks:
#                     every test, and the fuzz targets
#   build/ci-runtime  gcc, -DKILN_BUILD_COMPILER=OFF, the CUDA backend where
#                     nvcc is: the target runtime-build-tests only, and the
#                     tests labelled runtime-build or gpu (on plans the first
#                     build's kiln makes)
#
# A failing phase ends the run, except that both test phases and the fuzz
# phase all run once the builds are done (so one CI log shows every failure).
# Ends with a table of phase times (also in build/make-test-phases.txt) and
# exits non-zero if any phase failed. With --check it is `make check` instead:
# the runtime build's unit tests and the lit tests only (docs/testing.md).
# Environment: JOBS (default: nproc), NVCC (empty: no CUDA backend),
# FUZZ_TEST_SECONDS (default 25), PY.
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
NVCC=${NVCC:-}
FUZZ_TEST_SECONDS=${FUZZ_TEST_SECONDS:-25}
PY=${PY:-.venv/bin/python}
GEN=(-G Ninja)
if [[ -n $NVCC ]]; then
  CUDA_FLAGS=(-DKILN_CUDA=ON "-DCMAKE_CUDA_COMPILER=$NVCC")
else
  CUDA_FLAGS=(-DKILN_CUDA=OFF)
fi

mkdir -p build
TIMES=build/make-test-phases.txt
: >"$TIMES"
START=$(date +%s)
FAILED=()

report() {
  local total=$(($(date +%s) - START))
  echo
  echo "make test: phase times (seconds of wall; CPU: user + system of what the phase ran)"
  printf '%-28s %8s %8s  %s\n' phase seconds CPU result
  cat "$TIMES"
  printf '%-28s %8d %8s  %s\n' total "$total" "" "$(date -u +%FT%TZ)"
  if ((${#FAILED[@]})); then
    echo "make test: FAILED: ${FAILED[*]}"
  else
    echo "make test: all phases passed"
  fi
}
trap report EXIT

# phase NAME COMMAND...: runs COMMAND, records its time and result.
# Each phase's wall time, and the CPU time (user + system) of what it ran:
# the CPU seconds vary less than the wall on a shared machine.
phase() {
  local name=$1
  shift
  echo "=== make test: $name: $*"
  local t0=$(date +%s) rc=0 cpu_file
  cpu_file=$(mktemp)
  local TIMEFORMAT='%U %S'
  { time "$@" 2>&3 || rc=$?; } 3>&2 2>"$cpu_file"
  local cpu
  cpu=$(awk '{printf "%d", $1 + $2}' "$cpu_file")
  rm -f "$cpu_file"
  local result=ok
  ((rc)) && result="FAILED (exit $rc)" && FAILED+=("$name")
  printf '%-28s %8d %8s  %s\n' "$name" $(($(date +%s) - t0)) "${cpu:-?}" "$result" >>"$TIMES"
  return $rc
}

configure_asan() {
  env CC=clang-19 CXX=clang++-19 cmake -S . -B build/ci-asan "${GEN[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DKILN_FUZZ=ON -DKILN_CUDA=OFF
}
configure_runtime() {
  cmake -S . -B build/ci-runtime "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DKILN_BUILD_COMPILER=OFF "-DKILN_PLAN_BUILDER=$PWD/build/ci-asan/tools/kiln/kiln" \
    "${CUDA_FLAGS[@]}"
}

phase setup ./tools/setup.sh || exit 1

if [[ ${1:-} == --check ]]; then
  # make check: the runtime build's unit tests and the lit tests, in make
  # test's two trees (configured here the same way if missing).
  [[ -f build/ci-asan/build.ninja ]] || phase "configure ci-asan" configure_asan || exit 1
  [[ -f build/ci-runtime/build.ninja ]] || phase "configure ci-runtime" configure_runtime || exit 1
  phase "build lit tools" cmake --build build/ci-asan -j "$JOBS" \
    --target kiln-opt kiln-import kiln KilnExampleSiluTanh || exit 1
  phase "build unit tests" cmake --build build/ci-runtime -j "$JOBS" --target check-unit-tests || exit 1
  phase "unit tests" ctest --test-dir build/ci-runtime/test/unit --output-on-failure \
    --no-tests=error -j "$JOBS" -LE gpu
  phase lit env ASAN_OPTIONS=detect_leaks=0 ctest --test-dir build/ci-asan/test/lit \
    --output-on-failure --no-tests=error
  ((${#FAILED[@]} == 0))
  exit
fi

phase "configure ci-asan" configure_asan || exit 1
phase "build ci-asan" cmake --build build/ci-asan -j "$JOBS" || exit 1
phase "configure ci-runtime" configure_runtime || exit 1
phase "build ci-runtime" cmake --build build/ci-runtime -j "$JOBS" --target runtime-build-tests || exit 1

export ASAN_OPTIONS=detect_leaks=0
phase "test ci-asan" ctest --test-dir build/ci-asan --output-on-failure --no-tests=error -j "$JOBS"
phase "test ci-runtime" ctest --test-dir build/ci-runtime --output-on-failure --no-tests=error -j "$JOBS" \
  -L 'runtime-build|gpu'
phase fuzz "$PY" test/fuzz/run_fuzz.py --fuzz-dir build/ci-asan/fuzz \
  --builder build/ci-asan/tools/kiln/kiln --seconds "$FUZZ_TEST_SECONDS" --jobs "$JOBS"
((${#FAILED[@]} == 0))
