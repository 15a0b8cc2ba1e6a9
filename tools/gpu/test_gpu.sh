#!/usr/bin/env bash
# Runs every GPU test on the GPU machine (docs/testing.md#gpu-tests), from a
# bundle: a folder holding `kiln` and the test programs test/gpu/bundle.txt
# names, at any depth. `make gpu-bundle` packs one as build/gpu-bundle.tar.xz;
# tools/gpu/bundle_env.sh (sourced here when the bundle is one of those)
# unpacks it into build/gpu-bundle and puts the machine's cuBLASLt on
# LD_LIBRARY_PATH. A build folder of a CUDA build works as a bundle too.
# Fixtures and scripts come from this checkout. Suites:
#   pipeline   kiln_pipeline_tests, its "gpu" instances (the pipeline on the
#              device), four times: with CUDA graphs for decode steps (the
#              default), with KILN_CUDA_GRAPHS=0, with the kernel switches
#              flipped (PENDING_KERNELS below), and with KILN_PDL=1
#   oracle     kiln_backend_ops_test, its cuda cases (every op against the cpu);
#              again with kiln's GEMV on, with the switches flipped, and the
#              ops whose kernels launch programmatically with KILN_PDL=1
#   fixtures   test/gpu/fixtures_on_device.py: every fixture, fp32 and half
#              plans, against the cpu
#   other      any other program bundle.txt names, whole (the CUDA backend's
#              and the plan runner's tests), with the pipeline plans
#   memcheck   compute-sanitizer --tool memcheck on the pipeline tests
#              (MEMCHECK_FILTER, default every gpu_* one), then again with
#              the switches flipped
# Prints a table (suite, passed, failed, skipped) and exits 1 when any test
# failed, when a suite could not run, or when a device test skipped (on the
# GPU machine a skip means the device did not open).
#
# usage: tools/gpu/test_gpu.sh [BUNDLE_DIR] [--suites pipeline,oracle,...]
#   BUNDLE_DIR   default $KILN_GPU_BUNDLE, else build/gpu-bundle (unpacked
#                from build/gpu-bundle.tar.xz, or KILN_GPU_BUNDLE_TAR)
#   --suites     the suites to run, comma-separated (default all); each is
#                cut at SUITE_TIMEOUT, inside the device tool's 10 minutes a
#                command, so one suite per command always fits
# Environment: KILN_TEST_DEVICE (default cuda), LOG_DIR (each suite's full
# log, default build/gpu-test-logs), SUITE_TIMEOUT (seconds per suite,
# default 590), FIXTURES (fixture folders, default all), FIXTURE_JOBS
# (default 8), MEMCHECK_FILTER, MEMCHECK_ARGS
# (extra compute-sanitizer flags, e.g. --leak-check full), COMPUTE_SANITIZER
# (default: on PATH, else /usr/local/cuda/bin/compute-sanitizer), PYTHON.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=${KILN_GPU_BUNDLE:-$ROOT/build/gpu-bundle}
GIVEN=""
SUITES=pipeline,oracle,fixtures,other,memcheck
while [ $# -gt 0 ]; do
  case $1 in
    --suites) SUITES=$2; shift 2 ;;
    --suites=*) SUITES=${1#--suites=}; shift ;;
    -h|--help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
    -*) echo "test_gpu.sh: unknown option $1" >&2; exit 2 ;;
    *) BUNDLE=$1; GIVEN=1; shift ;;
  esac
done
# An unpacked bundle (bin/kiln), or, with no folder given, the place the
# archive unpacks to: bundle_env.sh unpacks the archive when it is newer
# (replacing the folder) and finds cuBLASLt. Never on a build folder.
TAR=${KILN_GPU_BUNDLE_TAR:-$ROOT/build/gpu-bundle.tar.xz}
if [ -f "$ROOT/tools/gpu/bundle_env.sh" ] && [ ! -f "$BUNDLE/CMakeCache.txt" ] &&
  { [ -x "$BUNDLE/bin/kiln" ] || { [ -z "$GIVEN" ] && [ -f "$TAR" ]; }; }; then
  export KILN_GPU_BUNDLE=$BUNDLE
  # shellcheck source=/dev/null # tools/gpu/bundle_env.sh, from the 8B flow
  . "$ROOT/tools/gpu/bundle_env.sh" || exit 2
  BUNDLE=$KILN_GPU_BUNDLE
fi
if [ ! -d "$BUNDLE" ]; then
  echo "test_gpu.sh: no bundle at $BUNDLE (make gpu-bundle, or pass its folder)" >&2
  exit 2
fi
BUNDLE=$(cd "$BUNDLE" && pwd)
export KILN_TEST_DEVICE=${KILN_TEST_DEVICE:-cuda}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-590}
MEMCHECK_FILTER=${MEMCHECK_FILTER:-'*/gpu_*'}
# Python with numpy and onnx: PYTHON, else this checkout's .venv, else python3.
PY=${PYTHON:-$( [ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || echo python3)}
LOG_DIR=${LOG_DIR:-$ROOT/build/gpu-test-logs}
mkdir -p "$LOG_DIR" || exit 2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-gpu-tests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The bundle's program named $1 (an executable file, at any depth), or "".
program() {
  find "$BUNDLE" -name "$1" -type f -perm -u+x -print -quit 2>/dev/null
}
want() { [[ ",$SUITES," == *",$1,"* ]]; }

ROWS=()
STATUS=0
# row SUITE PASSED FAILED SKIPPED [NOTE]: one line of the table; a failure,
# or a skip of a device test, makes the script fail.
row() {
  ROWS+=("$(printf '%-24s %7s %7s %8s  %s' "$1" "$2" "$3" "$4" "${5:-}")")
  if [ "$3" != 0 ] || [ "$4" != 0 ]; then STATUS=1; fi
}

# gtest_counts JSON: "passed failed skipped" from a --gtest_output=json file.
gtest_counts() {
  "$PY" - "$1" <<'EOF'
import json, sys
passed = failed = skipped = 0
for suite in json.load(open(sys.argv[1]))["testsuites"]:
    for t in suite["testsuite"]:
        if t.get("failures"):
            failed += 1
        elif t.get("result") == "SKIPPED":
            skipped += 1
        else:
            passed += 1
print(passed, failed, skipped)
EOF
}

# gtest SUITE PROGRAM FILTER [WRAPPER...]: runs a gtest program and adds its row.
gtest() {
  local suite=$1 prog=$2 filter=$3
  shift 3
  local json=$LOG_DIR/$suite.json log=$LOG_DIR/$suite.log
  rm -f "$json"
  echo "== $suite: $* $prog --gtest_filter=$filter"
  timeout "$SUITE_TIMEOUT" "$@" "$prog" --gtest_filter="$filter" --gtest_output="json:$json" \
    >"$log" 2>&1
  local rc=$?
  grep -E '^\[  (FAILED|SKIPPED) +\]|^\[  PASSED  \]|ERROR SUMMARY|Failure|error' "$log" | head -40
  if [ ! -s "$json" ]; then
    tail -20 "$log"
    row "$suite" 0 1 0 "no results (exit $rc$([ $rc = 124 ] && echo ', timed out'))"
    return 1
  fi
  read -r p f s < <(gtest_counts "$json")
  # compute-sanitizer's verdict, when it wrapped the program.
  local errors
  errors=$(grep -m1 -o 'ERROR SUMMARY: [0-9]* error' "$log" | grep -o '[0-9]*')
  if [ -n "$errors" ] && [ "$errors" != 0 ]; then
    grep -m 20 -E '^========= ' "$log"
    row "$suite" "$p" "$((f + 1))" "$s" "compute-sanitizer: $errors error(s)"
    return 1
  fi
  if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
    tail -20 "$log"
    f=1
    row "$suite" "$p" "$f" "$s" "exit $rc with no failed test"
    return 1
  fi
  if [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ]; then
    row "$suite" 0 1 0 "the filter matched no test"
    return 1
  fi
  row "$suite" "$p" "$f" "$s" "${errors:+compute-sanitizer: 0 errors}"
}

KILN=$(program kiln)
if [ -z "$KILN" ]; then
  echo "test_gpu.sh: the bundle $BUNDLE has no kiln" >&2
  exit 2
fi
echo "bundle $BUNDLE, kiln $KILN, device $KILN_TEST_DEVICE"
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi lists no GPU)"

# The pipeline tests' plans, built here by the bundle's kiln.
PLANS=""
if want pipeline || want memcheck || want other; then
  for fixture in demo llama-optimum gpt2-optimum; do
    name=${fixture%-optimum}
    if ! "$KILN" build "$ROOT/test/fixtures/$fixture/model.onnx" -o "$WORK/$name.plan" --quiet; then
      echo "test_gpu.sh: kiln build of $fixture failed" >&2
      row plans 0 1 0 "kiln build $fixture failed"
      continue
    fi
    PLANS+="${PLANS:+,}$name=$WORK/$name.plan"
  done
fi
export KILN_TEST_PLANS=$PLANS

PIPELINE=$(program kiln_pipeline_tests)
# The switches of kernels written without a device (docs/gpu.md, "Pending
# kernels"), flipped: KILN_LT_TUNE, still off by default, on; the decode
# attention kernel and the register norms (on by default since 2026-12-05)
# off, which keeps the paths they replaced under test in the same suites.
PENDING_KERNELS="KILN_DECODE_ATTENTION=0 KILN_LT_TUNE=1 KILN_VEC_NORM=0"
if want pipeline; then
  if [ -n "$PIPELINE" ]; then
    gtest pipeline "$PIPELINE" '*/gpu_*'
    # Again with every step eager (decode steps run as CUDA graphs above).
    gtest pipeline-no-graphs "$PIPELINE" '*/gpu_*' env KILN_CUDA_GRAPHS=0
    # And with the kernel switches flipped (docs/gpu.md, "Pending kernels").
    # shellcheck disable=SC2086 # three settings
    gtest pipeline-pending "$PIPELINE" '*/gpu_*' env $PENDING_KERNELS
    # And with programmatic launches (KILN_PDL=1, docs/gpu.md), graphs on.
    gtest pipeline-pdl "$PIPELINE" '*/gpu_*' env KILN_PDL=1
  else
    row pipeline 0 1 0 "kiln_pipeline_tests is not in the bundle"
  fi
fi

if want oracle; then
  ORACLE=$(program kiln_backend_ops_test)
  if [ -n "$ORACLE" ]; then
    gtest oracle "$ORACLE" "*/${KILN_TEST_DEVICE%%:*}_*"
    # kiln's GEMV is opt-in (KILN_CUDA_GEMV=1, docs/gpu.md): its cases again with it on.
    gtest oracle-gemv "$ORACLE" "*/${KILN_TEST_DEVICE%%:*}_*gemv_*" env KILN_CUDA_GEMV=1
    # Every case again with the kernel switches flipped (docs/gpu.md).
    # shellcheck disable=SC2086 # three settings
    gtest oracle-pending "$ORACLE" "*/${KILN_TEST_DEVICE%%:*}_*" env $PENDING_KERNELS
    # The ops whose kernels KILN_PDL=1 launches programmatically.
    dev=${KILN_TEST_DEVICE%%:*}
    gtest oracle-pdl "$ORACLE" "*/${dev}_rms_norm*:*/${dev}_add_rms_norm*:*/${dev}_rotary*:*/${dev}_split*:*/${dev}_paged_attention*" \
      env KILN_PDL=1
  else
    row oracle 0 1 0 "kiln_backend_ops_test is not in the bundle"
  fi
fi

if want fixtures; then
  echo "== fixtures: test/gpu/fixtures_on_device.py"
  # shellcheck disable=SC2086 # FIXTURES is a list of folders
  timeout "$SUITE_TIMEOUT" "$PY" "$ROOT/test/gpu/fixtures_on_device.py" --kiln "$KILN" \
    --jobs "${FIXTURE_JOBS:-8}" --build-flag=--require-injection \
    --summary "$LOG_DIR/fixtures.json" ${FIXTURES:-} >"$LOG_DIR/fixtures.log" 2>&1
  rc=$?
  grep -E '^(FAIL|SKIP)|^device |^fixtures on' "$LOG_DIR/fixtures.log" | head -200
  if [ -s "$LOG_DIR/fixtures.json" ]; then
    read -r p f s < <("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]));
print(d["passed"], d["failed"], d["skipped"])' "$LOG_DIR/fixtures.json")
    [ "$rc" != 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ] && f=1
    row fixtures "$p" "$f" "$s" "$([ "$rc" != 0 ] && echo "exit $rc")"
  else
    tail -20 "$LOG_DIR/fixtures.log"
    row fixtures 0 1 0 "no summary (exit $rc$([ $rc = 124 ] && echo ', timed out'))"
  fi
fi

if want other; then
  while read -r target _; do
    case $target in
      ''|'#'*|kiln|kiln_pipeline_tests|kiln_backend_ops_test) continue ;;
    esac
    prog=$(program "$target")
    if [ -n "$prog" ]; then
      gtest "$target" "$prog" '*'
    else
      row "$target" 0 1 0 "not in the bundle"
    fi
  done <"$ROOT/test/gpu/bundle.txt"
fi

if want memcheck; then
  SANITIZER=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer ||
    echo /usr/local/cuda/bin/compute-sanitizer)}
  if [ ! -x "$SANITIZER" ]; then
    row memcheck 0 1 0 "no compute-sanitizer (set COMPUTE_SANITIZER)"
  elif [ -z "$PIPELINE" ]; then
    row memcheck 0 1 0 "kiln_pipeline_tests is not in the bundle"
  else
    # shellcheck disable=SC2086 # MEMCHECK_ARGS is a list of flags
    gtest memcheck "$PIPELINE" "$MEMCHECK_FILTER" "$SANITIZER" --tool memcheck \
      --error-exitcode 3 ${MEMCHECK_ARGS:-}
    # shellcheck disable=SC2086
    gtest memcheck-pending "$PIPELINE" "$MEMCHECK_FILTER" env $PENDING_KERNELS "$SANITIZER" \
      --tool memcheck --error-exitcode 3 ${MEMCHECK_ARGS:-}
  fi
fi

echo
printf '%-24s %7s %7s %8s  %s\n' suite passed failed skipped note
for r in "${ROWS[@]}"; do echo "$r"; done
if [ "$STATUS" = 0 ]; then echo "test-gpu: all passed"; else echo "test-gpu: FAILED"; fi
exit "$STATUS"
