#!/usr/bin/env bash
# Greedy tokens of a plan with kernel switches flipped must equal the
# default's (docs/gpu.md): a switch that only changes how kernels launch
# (KILN_PDL) or how work is split (KILN_DECODE_FILL_BLOCKS) may move logits by
# rounding at most, so greedy tokens of random-weight models may in rare
# cases differ at a near tie; the table shows where the first difference is.
#
# usage: tools/gpu/ab_greedy.sh PLAN SETTING [SETTING ...]
#   SETTING   VAR=value, several for one run joined by commas
# Runs `kiln run PLAN --prompts-file` with batched greedy prompts (of 1, 7,
# 100 and 1000 random token ids, 64 new tokens each, EOS ignored) once with
# the environment as it is, then once per SETTING, and compares every
# completion's tokens with the first run's. Environment: KILN (default: the
# bundle's, through tools/gpu/bundle_env.sh), KILN_DEVICE (default cuda),
# PYTHON (python3), NEW_TOKENS (64), VOCAB (the prompt ids are drawn from
# [1, VOCAB); default 32000), PROMPT_LENS (default "1 7 100 1000").
# Exits 1 when any completion differs.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ $# -lt 2 ]; then
  awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
  exit 2
fi
PLAN=$1
shift
PY=${PYTHON:-python3}
if [ -z "${KILN:-}" ]; then
  # shellcheck source=tools/gpu/bundle_env.sh
  . "$ROOT/tools/gpu/bundle_env.sh" || exit 2
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kiln-ab-greedy.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# shellcheck disable=SC2086 # PROMPT_LENS: one argument a length
"$PY" - "$WORK/prompts.jsonl" "${NEW_TOKENS:-64}" "${VOCAB:-32000}" ${PROMPT_LENS:-1 7 100 1000} <<'EOF'
import json, random, sys
rng = random.Random(7)
vocab = int(sys.argv[3])
with open(sys.argv[1], "w") as f:
    for n in map(int, sys.argv[4:]):
        ids = [rng.randrange(1, vocab) for _ in range(n)]
        f.write(json.dumps({"prompt_ids": ids, "max_new_tokens": int(sys.argv[2]),
                            "ignore_eos": True}) + "\n")
EOF

run() { # $1: output file; the rest: VAR=value settings
  local out=$1
  shift
  env "$@" "$KILN" run "$PLAN" --device "${KILN_DEVICE:-cuda}" --prompts-file "$WORK/prompts.jsonl" \
    --no-stream >"$out" 2>"$out.err"
}

if ! run "$WORK/default.jsonl"; then
  echo "ab_greedy.sh: the default run failed:" >&2
  cat "$WORK/default.jsonl.err" >&2
  exit 1
fi
STATUS=0
for setting in "$@"; do
  name=${setting//[=,]/_}
  # shellcheck disable=SC2086 # the settings, split at commas
  if ! run "$WORK/$name.jsonl" ${setting//,/ }; then
    echo "ab_greedy.sh: the run with $setting failed:" >&2
    cat "$WORK/$name.jsonl.err" >&2
    STATUS=1
    continue
  fi
  "$PY" - "$WORK/default.jsonl" "$WORK/$name.jsonl" "$setting" <<'EOF' || STATUS=1
import json, sys
def tokens(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return {r["index"]: r["tokens"] for r in rows}
a, b = tokens(sys.argv[1]), tokens(sys.argv[2])
bad = 0
for i in sorted(a):
    x, y = a[i], b.get(i)
    if y == x:
        print(f"{sys.argv[3]}: prompt {i}: {len(x)} tokens equal")
        continue
    bad += 1
    first = next((k for k, (p, q) in enumerate(zip(x, y or [])) if p != q), None)
    print(f"{sys.argv[3]}: prompt {i}: DIFFERS (first at token {first}, lengths {len(x)}/{len(y or [])})")
sys.exit(1 if bad or not a or len(b) != len(a) else 0)
EOF
done
exit "$STATUS"
