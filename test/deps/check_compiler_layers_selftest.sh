#!/usr/bin/env bash
# The layer check must fail, naming the file, on each kind of violation the
# rules forbid; run on a scratch tree so the real one stays clean.
set -uo pipefail
check=$(dirname "$0")/check_compiler_layers.sh
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
for d in compiler/support compiler/dialect compiler/importer compiler/plan compiler/driver passes; do
  mkdir -p "$tmp/$d"
  echo '#include "compiler/support/BuildError.h"' >"$tmp/$d/Ok.cpp"
done
"$check" "$tmp" >/dev/null || { echo "FAIL: a clean tree was refused"; exit 1; }
fail=0
# file, the include it must be refused for
cases=(
  "compiler/plan/A.cpp|compiler/driver/BuildError.h"
  "compiler/plan/B.cpp|passes/Passes.h"
  "compiler/importer/C.cpp|compiler/driver/BuildDriver.h"
  "compiler/importer/D.cpp|compiler/plan/PlanWriter.h"
  "compiler/dialect/E.h|passes/InjectUtils.h"
  "compiler/driver/F.cpp|passes/Passes.h"
  "compiler/support/G.cpp|compiler/dialect/KilnOps.h"
  "passes/H.cpp|compiler/driver/BuildDriver.h"
)
for c in "${cases[@]}"; do
  file=${c%%|*} header=${c#*|}
  printf '#include "%s"\n' "$header" >"$tmp/$file"
  out=$("$check" "$tmp" 2>&1)
  if [[ $? -eq 0 || "$out" != *"$tmp/$file:1:"*"$header"* ]]; then
    echo "FAIL: $file including $header was not refused by name:"; echo "$out"; fail=1
  fi
  rm "$tmp/$file"
done
# A missing layer folder is an error, not a pass.
rm -r "$tmp/compiler/plan"
if "$check" "$tmp" >/dev/null; then echo "FAIL: a missing layer folder passed"; fail=1; fi
[[ $fail -eq 0 ]] && echo "compiler layer check self-test passed"
exit $fail
