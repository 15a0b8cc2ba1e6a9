#!/usr/bin/env bash
# The 8B flow on the GPU machine (docs/gpu.md), from the bundle that
# build/gpu-bundle.tar.xz carries and this checkout:
#   fill    test/models/llama3-8b-shape's weightless graph + random weights
#           (tools/gpu/fill_random_weights.py): a Llama-3-8B-shaped model,
#           32 GB of f32 external data
#   build   kiln build of it into a bf16 plan (BUILD_FLAGS), wall time and
#           peak RSS recorded
#   tests   tools/gpu/test_gpu.sh, every GPU test (where that script exists)
#   bench   kiln bench offline on the device: batch 1, a PROMPT_LEN-token
#           prompt (prefill time = TTFT) and NEW_TOKENS new tokens (decode
#           tok/s = 1000 / TPOT), the median of BENCH_RUNS - 1 runs after one
#           warm-up
#   hf      tools/gpu/bench_hf.py: transformers with a static cache and
#           torch.compile on the same shape, the same measurements
# then one table of everything measured so far in WORK (steps may run in
# separate calls, each inside the device tool's 10 minutes).
#
# usage: tools/gpu/run_8b.sh [--steps fill,build,tests,bench,hf] [--work DIR]
# Environment: KILN_8B_WORK (default build/8b), BUILD_FLAGS (default
# "--require-injection --target cuda --dtype bf16"), KILN_DEVICE (default cuda),
# PROMPT_LEN (1024), NEW_TOKENS (128), BENCH_RUNS (4), PYTHON (python3),
# DEVICE_FLAG (default --device; --backend for a kiln from before the CUDA
# backend), HF_FLAGS (more bench_hf.py flags, e.g. "--device cpu
# --no-compile" for a dry run), KILN_8B_GRAPH (default test/models/llama3-8b-shape; make_8b_graph.py --size
# tiny makes a small one for a dry run);
# KILN_GPU_BUNDLE / KILN_GPU_BUNDLE_TAR as tools/gpu/bundle_env.sh reads them.
# Exits non-zero when a step fails; the table still prints.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
STEPS=fill,build,tests,bench,hf
WORK=${KILN_8B_WORK:-$ROOT/build/8b}
while [ $# -gt 0 ]; do
  case $1 in
    --steps) STEPS=$2; shift 2 ;;
    --steps=*) STEPS=${1#--steps=}; shift ;;
    --work) WORK=$2; shift 2 ;;
    --work=*) WORK=${1#--work=}; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
    *) echo "run_8b.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
DEVICE=${KILN_DEVICE:-cuda}
BUILD_FLAGS=${BUILD_FLAGS:---require-injection --target cuda --dtype bf16}
PROMPT_LEN=${PROMPT_LEN:-1024}
NEW_TOKENS=${NEW_TOKENS:-128}
GRAPH=${KILN_8B_GRAPH:-$ROOT/test/models/llama3-8b-shape}
MODEL=$WORK/model
PLAN=$WORK/llama3-8b-bf16.plan
mkdir -p "$WORK"
want() { [[ ",$STEPS," == *",$1,"* ]]; }
STATUS=0
fail() { echo "run_8b.sh: $*" >&2; STATUS=1; }

# shellcheck source=tools/gpu/bundle_env.sh
. "$ROOT/tools/gpu/bundle_env.sh" || exit 2
echo "== $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: no GPU listed')"
echo "== disk: $(df -h "$WORK" | awk 'NR == 2 {print $4 " free on " $6}')"

if want fill; then
  want_bytes=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_bytes"])' \
    "$GRAPH/weights.json")
  have_bytes=$(stat -c %s "$MODEL/model.onnx_data" 2>/dev/null || echo 0)
  if [ -f "$MODEL/model.onnx" ] && [ "$have_bytes" = "$want_bytes" ]; then
    echo "== fill: $MODEL is there ($want_bytes bytes of weights)"
  else
    echo "== fill: $MODEL"
    rm -rf "$MODEL"
    "$PY" tools/gpu/measure.py --json "$WORK/fill.json" -- \
      "$PY" tools/gpu/fill_random_weights.py "$GRAPH" "$MODEL" || fail "fill failed"
  fi
fi

if want build; then
  echo "== build: kiln build $MODEL/model.onnx $BUILD_FLAGS"
  rm -f "$PLAN"
  # shellcheck disable=SC2086
  if "$PY" tools/gpu/measure.py --json "$WORK/build.json" -- \
      "$KILN" build "$MODEL/model.onnx" -o "$PLAN" $BUILD_FLAGS; then
    "$KILN" inspect "$PLAN" | head -40
  else
    fail "kiln build failed"
  fi
fi

if want tests; then
  if [ -x tools/gpu/test_gpu.sh ]; then
    echo "== tests: tools/gpu/test_gpu.sh $KILN_GPU_BUNDLE"
    tools/gpu/test_gpu.sh "$KILN_GPU_BUNDLE" 2>&1 | tee "$WORK/tests.log"
    [ "${PIPESTATUS[0]}" = 0 ] || fail "GPU tests failed (log $WORK/tests.log)"
  else
    fail "no tools/gpu/test_gpu.sh in this checkout"
  fi
fi

if want bench; then
  echo "== bench: kiln bench offline --device $DEVICE, batch 1, $PROMPT_LEN-token prompts, $NEW_TOKENS new tokens"
  rm -f "$WORK/kiln_bench.json"
  # One request per level and BENCH_RUNS levels of concurrency 1: each level
  # is one request alone (TTFT = its prefill, not time queued behind
  # another), the first one warms up and the table takes the median of the rest.
  levels=$(printf '1%.0s,' $(seq "${BENCH_RUNS:-4}")); levels=${levels%,}
  "$KILN" bench offline "$PLAN" "${DEVICE_FLAG:---device}" "$DEVICE" --num-prompts 1 \
    --input-len "$PROMPT_LEN" --output-len "$NEW_TOKENS" --concurrency "$levels" \
    --max-batched-tokens "$PROMPT_LEN" --kv-cache-mb 2048 --json "$WORK/kiln_bench.json" \
    || fail "kiln bench failed"
fi

if want hf; then
  echo "== hf: tools/gpu/bench_hf.py (static cache + torch.compile)"
  rm -f "$WORK/hf.json"
  # shellcheck disable=SC2086
  "$PY" tools/gpu/bench_hf.py "$GRAPH" --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS" \
    --json "$WORK/hf.json" ${HF_FLAGS:-} || fail "the transformers baseline failed"
fi

echo
"$PY" - "$WORK" <<'EOF'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
def load(name):
    p = w / name
    return json.loads(p.read_text()) if p.exists() else None
fill, build, bench, hf = (load(n) for n in ("fill.json", "build.json", "kiln_bench.json", "hf.json"))
print("Llama-3-8B shape (random weights), bf16, batch 1")
if fill:
    print(f"fill random weights: {fill['wall_s']:.1f} s")
if build:
    ok = "" if build["returncode"] == 0 else f" (FAILED, exit {build['returncode']})"
    print(f"kiln build: {build['wall_s']:.1f} s wall, peak RSS {build['peak_rss_mib'] / 1024:.2f} GiB{ok}")
print(f"| engine | prefill of {bench['input_len'] if bench else 'the'} prompt tokens (s) | decode tok/s |")
print("| --- | --- | --- |")
if bench:
    import statistics
    runs = bench["results"][1:] or bench["results"]  # the first run warms up
    ttft = statistics.median(r["ttft_ms_p50"] for r in runs)
    tpot = statistics.median(r["tpot_ms_p50"] for r in runs)
    print(f"| kiln (median of {len(runs)} runs) | {ttft / 1000:.3f} | "
          f"{1000 / tpot if tpot else float('nan'):.1f} |")
else:
    print("| kiln | - | - |")
if hf:
    print(f"| {hf['engine']} | {hf['prefill_s']:.3f} | {hf['decode_tok_s']:.1f} |")
else:
    print("| transformers | - | - |")
EOF
exit "$STATUS"
