#!/usr/bin/env bash
# The 8B flow on the GPU machine (docs/gpu.md), from the bundle that
# build/gpu-bundle.tar.xz carries and this checkout:
#   peaks   tools/gpu/measure_peaks.py: this card's copy rate and bf16
#           product rate, WORK/peaks.json; later steps take PEAK_GBPS and
#           PEAK_TFLOPS from it unless the environment sets them
#   fill    test/models/llama3-8b-shape's weightless graph + random weights
#           (tools/gpu/fill_random_weights.py): a Llama-3-8B-shaped model,
#           32 GB of f32 external data
#   build   kiln build of it into a bf16 plan (BUILD_FLAGS), wall time and
#           peak RSS recorded
#   tests   tools/gpu/test_gpu.sh, every GPU test (where that script exists)
#   bench   on the device: kiln bench latency (batch 1, a PROMPT_LEN-token
#           prompt's TTFT and the decode rate of NEW_TOKENS new tokens, medians
#           of BENCH_RUNS runs after a warm-up, against the bandwidth floor at
#           PEAK_GBPS), then kiln bench offline (OFFLINE_PROMPTS requests of
#           PROMPT_LEN in and NEW_TOKENS out at concurrency OFFLINE_CONCURRENCY,
#           --gpu-memory-utilization 0.9 (--kv-cache-mb 2048 on the cpu): total and
#           output tok/s, and how
#           many 2k-token sequences the KV cache holds); JSON (and a PNG) in WORK
#   profile the roofline (docs/benchmarks.md): KILN_PROFILE=shape kiln run of
#           a PROMPT_LEN-token prompt after a warm-up one (the prefill), then
#           of 64 decode steps, ops timed on the device (eager: no graphs),
#           each op's share and its fraction of PEAK_GBPS and PEAK_TFLOPS
#           (790); tables in WORK/profile_{prefill,decode}.txt
#   ab      kiln bench latency again with CUDA graphs off, host sampling,
#           kiln's GEMV on, and each kernel switch of docs/gpu.md flipped
#           from its default, one at a time (AB_SWITCHES;
#           WORK/kiln_latency_*.json)
#   hf      tools/gpu/bench_hf.py: transformers with a static cache and
#           torch.compile on the same shape, the same measurements
#   hfbatch tools/gpu/bench_hf.py --batch-requests OFFLINE_PROMPTS: transformers'
#           continuous batching (generate_batch), the offline bench's requests
# then one table of everything measured so far in WORK (steps may run in
# separate calls, each inside the device tool's 10 minutes).
#
# usage: tools/gpu/run_8b.sh [--steps peaks,fill,build,tests,bench,profile,ab,hf,hfbatch] [--work DIR]
# Environment: KILN_8B_WORK (default build/8b), BUILD_FLAGS (default
# "--require-injection --target cuda --dtype bf16"), KILN_DEVICE (default cuda),
# PROMPT_LEN (1024), NEW_TOKENS (128), BENCH_RUNS (4), PEAK_GBPS (WORK/peaks.json's,
# else 4276, an H200's measured copy rate), PEAK_TFLOPS (likewise, else 790),
# OFFLINE_PROMPTS (256), OFFLINE_CONCURRENCY (256),
# OFFLINE_BATCHED_TOKENS (8192, tokens of one step), PYTHON (python3),
# AB_SWITCHES (the ab step's runs: VAR=value settings, space-separated,
# several for one run joined by commas),
# DEVICE_FLAG (default --device; --backend for a kiln from before the CUDA
# backend), HF_FLAGS (more bench_hf.py flags, e.g. "--device cpu
# --no-compile" for a dry run), KILN_8B_GRAPH (default test/models/llama3-8b-shape; make_8b_graph.py --size
# tiny makes a small one for a dry run);
# KILN_GPU_BUNDLE / KILN_GPU_BUNDLE_TAR as tools/gpu/bundle_env.sh reads them.
# Exits non-zero when a step fails; the table still prints.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
STEPS=peaks,fill,build,tests,bench,profile,hf
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
# Named after the graph's folder: llama3-8b-shape.plan, mixtral-shape.plan.
PLAN=$WORK/$(basename "$GRAPH").plan
mkdir -p "$WORK"
want() { [[ ",$STEPS," == *",$1,"* ]]; }
STATUS=0
fail() { echo "run_8b.sh: $*" >&2; STATUS=1; }

# shellcheck source=tools/gpu/bundle_env.sh
. "$ROOT/tools/gpu/bundle_env.sh" || exit 2
echo "== $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi: no GPU listed')"
echo "== disk: $(df -h "$WORK" | awk 'NR == 2 {print $4 " free on " $6}')"

if want peaks; then
  echo "== peaks: tools/gpu/measure_peaks.py --device $DEVICE"
  "$PY" tools/gpu/measure_peaks.py --device "$DEVICE" --json "$WORK/peaks.json" ||
    fail "measuring the card's peaks failed"
fi
# The ceilings the fractions divide by: the environment's, else this card's
# (the peaks step, this call or an earlier one on the machine), else an H200's.
peak_of() {
  "$PY" -c 'import json, sys; print(f"{json.load(open(sys.argv[1]))[sys.argv[2]]:.6g}")' \
    "$WORK/peaks.json" "$1" 2>/dev/null
}
if [ -z "${PEAK_GBPS:-}" ] && [ -f "$WORK/peaks.json" ]; then PEAK_GBPS=$(peak_of copy_gbps); fi
if [ -z "${PEAK_TFLOPS:-}" ] && [ -f "$WORK/peaks.json" ]; then PEAK_TFLOPS=$(peak_of gemm_tflops); fi
PEAK_GBPS=${PEAK_GBPS:-4276}
PEAK_TFLOPS=${PEAK_TFLOPS:-790}
echo "== ceilings: $PEAK_GBPS GB/s, $PEAK_TFLOPS TFLOP/s"

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
  echo "== bench latency: kiln bench latency --device $DEVICE, batch 1, $PROMPT_LEN-token prompts, $NEW_TOKENS new tokens"
  rm -f "$WORK/kiln_latency.json" "$WORK/kiln_offline.json" "$WORK/kiln_offline.png"
  "$KILN" bench latency "$PLAN" "${DEVICE_FLAG:---device}" "$DEVICE" --prompt-len "$PROMPT_LEN" \
    --decode-tokens "$NEW_TOKENS" --repeats "${BENCH_RUNS:-4}" --peak-gbps "$PEAK_GBPS" \
    --kv-cache-mb 2048 --json "$WORK/kiln_latency.json" || fail "kiln bench latency failed"
  # The KV cache from 0.9 of the free device memory; the cpu (a dry run) has none.
  kv_flags=(--gpu-memory-utilization 0.9)
  [ "${DEVICE%%:*}" = cpu ] && kv_flags=(--kv-cache-mb 2048)
  echo "== bench offline: ${OFFLINE_PROMPTS:-256} requests of $PROMPT_LEN in, $NEW_TOKENS out"
  "$KILN" bench offline "$PLAN" "${DEVICE_FLAG:---device}" "$DEVICE" \
    --num-prompts "${OFFLINE_PROMPTS:-256}" --input-len "$PROMPT_LEN" --output-len "$NEW_TOKENS" \
    --concurrency "${OFFLINE_CONCURRENCY:-256}" --max-batched-tokens "${OFFLINE_BATCHED_TOKENS:-8192}" \
    "${kv_flags[@]}" --json "$WORK/kiln_offline.json" \
    --plot "$WORK/kiln_offline.png" || fail "kiln bench offline failed"
fi

if want profile; then
  # The prefill: two prompts of PROMPT_LEN one after the other, the first a
  # warm-up (first calls build cuBLASLt plans and load kernels) that
  # KILN_PROFILE_SKIP leaves out. Decode: 64 steps after a 4-token prompt,
  # the prompt's step and the first decode step left out. Profiled runs are
  # eager (no CUDA graphs) and time each op on the device.
  "$PY" -c 'import json, sys
n = int(sys.argv[1])
for s in (1, 2):
    print(json.dumps({"prompt_ids": list(range(s, s + n))}))' "$PROMPT_LEN" >"$WORK/profile_prompts.jsonl"
  for what in prefill decode; do
    if [ "$what" = prefill ]; then
      skip=1 args=(--prompts-file "$WORK/profile_prompts.jsonl" --max-seqs 1 --max-new-tokens 1)
    else
      skip=2 args=(--prompt-ids 1,2,3,4 --max-new-tokens 64)
    fi
    echo "== profile: $what (KILN_PROFILE=shape KILN_PROFILE_SKIP=$skip kiln run ${args[*]})"
    KILN_PROFILE=shape KILN_PROFILE_SKIP=$skip KILN_PEAK_GBPS="$PEAK_GBPS" \
      KILN_PEAK_TFLOPS="$PEAK_TFLOPS" "$KILN" run "$PLAN" "${DEVICE_FLAG:---device}" \
      "$DEVICE" "${args[@]}" --ignore-eos --no-stream --no-prefix-caching \
      --max-batched-tokens "$PROMPT_LEN" --kv-cache-mb 2048 \
      >/dev/null 2>"$WORK/profile_$what.txt" || fail "the $what profile failed"
    grep -A30 '^kiln profile' "$WORK/profile_$what.txt" | head -31
  done
fi

if want ab; then
  # The kernel switches of docs/gpu.md, each flipped from its default.
  # =0: the paths the defaults of 2026-12-05 replaced; KILN_LT_TUNE is still off.
  PENDING="KILN_DECODE_ATTENTION=0 KILN_LT_TUNE=1 KILN_VEC_NORM=0"
  # What each switch is worth at batch 1: the latency bench again with one
  # of them flipped (docs/gpu.md), 3 runs after a warm-up each.
  for ab in ${AB_SWITCHES:-KILN_CUDA_GRAPHS=0 KILN_DEVICE_SAMPLING=0 KILN_CUDA_GEMV=1 $PENDING}; do
    echo "== ab: ${ab//,/ } kiln bench latency"
    # shellcheck disable=SC2086 # one setting, or several joined by commas
    env ${ab//,/ } "$KILN" bench latency "$PLAN" "${DEVICE_FLAG:---device}" "$DEVICE" \
      --prompt-len "$PROMPT_LEN" --decode-tokens "$NEW_TOKENS" --repeats 3 \
      --peak-gbps "$PEAK_GBPS" --kv-cache-mb 2048 \
      --json "$WORK/kiln_latency_${ab//[=,]/_}.json" | tail -4 || fail "$ab kiln bench latency failed"
  done
fi

if want hf; then
  echo "== hf: tools/gpu/bench_hf.py (static cache + torch.compile)"
  rm -f "$WORK/hf.json"
  # shellcheck disable=SC2086
  "$PY" tools/gpu/bench_hf.py "$GRAPH" --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS" \
    --json "$WORK/hf.json" ${HF_FLAGS:-} || fail "the transformers baseline failed"
fi

if want hfbatch; then
  echo "== hfbatch: tools/gpu/bench_hf.py --batch-requests ${OFFLINE_PROMPTS:-256} (generate_batch)"
  rm -f "$WORK/hf_batch.json"
  # shellcheck disable=SC2086
  "$PY" tools/gpu/bench_hf.py "$GRAPH" --prompt-len "$PROMPT_LEN" --new-tokens "$NEW_TOKENS" \
    --batch-requests "${OFFLINE_PROMPTS:-256}" --json "$WORK/hf_batch.json" ${HF_FLAGS:-} ||
    fail "the transformers continuous-batching baseline failed"
fi

echo
"$PY" - "$WORK" "$GRAPH" <<'EOF'
import json, sys
from pathlib import Path
w = Path(sys.argv[1])
cfg = json.loads((Path(sys.argv[2]) / "config.json").read_text())
def load(name):
    p = w / name
    return json.loads(p.read_text()) if p.exists() else None
fill, build, lat, off, hf, hfb, peaks = (
    load(n) for n in ("fill.json", "build.json", "kiln_latency.json", "kiln_offline.json",
                      "hf.json", "hf_batch.json", "peaks.json"))
print(f"{Path(sys.argv[2]).name}: {cfg.get('model_type', '?')}, hidden {cfg.get('hidden_size')}, "
      f"{cfg.get('num_hidden_layers')} layers"
      + (f", {cfg['num_local_experts']} experts, top {cfg.get('num_experts_per_tok')}"
         if cfg.get("num_local_experts") else "") + " (random weights), bf16")
if peaks:
    print(f"the card ({peaks['device']}): copy {peaks['copy_gbps']:.0f} GB/s, "
          f"{peaks['gemm_dtype']} product {peaks['gemm_tflops']:.4g} TFLOP/s")
if fill:
    print(f"fill random weights: {fill['wall_s']:.1f} s")
if build:
    ok = "" if build["returncode"] == 0 else f" (FAILED, exit {build['returncode']})"
    print(f"kiln build: {build['wall_s']:.1f} s wall, peak RSS {build['peak_rss_mib'] / 1024:.2f} GiB{ok}")
print("\nBatch 1:")
print(f"| engine | TTFT of {lat['prompt_len'] if lat else 'the'} prompt tokens (ms) | decode tok/s | fraction of the bandwidth floor |")
print("| --- | --- | --- | --- |")
if lat:
    frac = f"{lat['fraction_of_floor'] * 100:.1f}% of {lat['floor_ms_per_token']:.3f} ms/token" if "fraction_of_floor" in lat else "-"
    print(f"| kiln (median of {lat['repeats']} runs) | {lat['ttft_ms_median']:.1f} | "
          f"{lat['decode_tok_s_median']:.1f} | {frac} |")
else:
    print("| kiln | - | - | - |")
if hf:
    print(f"| {hf['engine']} | {hf['prefill_s'] * 1000:.1f} | {hf['decode_tok_s']:.1f} | - |")
else:
    print("| transformers | - | - | - |")
print("\nThroughput:")
print("| engine | requests | total tok/s | output tok/s | 2k-token sequences in the KV cache |")
print("| --- | --- | --- | --- | --- |")
if off:
    r = off["results"][-1]
    print(f"| kiln (concurrency {r['concurrency']}) | {r['requests']} x {off['input_len']}/{off['output_len']} | "
          f"{r['total_tokens_per_s']:.0f} | {r['output_tokens_per_s']:.0f} | {r['kv_cache_seqs_2k']} |")
else:
    print("| kiln | - | - | - | - |")
if hfb:
    print(f"| {hfb['engine']} | {hfb['requests']} x {hfb['prompt_len']}/{hfb['new_tokens']} | "
          f"{hfb['total_tok_s']:.0f} | {hfb['output_tok_s']:.0f} | - |")
EOF
exit "$STATUS"
