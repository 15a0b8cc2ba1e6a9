#!/usr/bin/env bash
# The tool header check must refuse, naming the file, each kind of include
# the rule forbids, and accept the allowed kinds; run on a scratch tree.
set -uo pipefail
check=$(dirname "$0")/check_tool_headers.sh
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tools/kiln" "$tmp/runtime/include/kiln"
touch "$tmp/runtime/include/kiln/plan.h" "$tmp/tools/kiln/cli.h"
printf '#include "cli.h"\n#include "kiln/plan.h"\n#include "kiln_source_commit.h"\n' \
  >"$tmp/tools/kiln/cmd_run.cpp"
printf '#include "compiler/driver/BuildDriver.h"\n#include "llvm/Support/Error.h"\n' \
  >"$tmp/tools/kiln/cmd_build.cpp"
"$check" "$tmp" >/dev/null || { echo "FAIL: a clean tree was refused"; "$check" "$tmp"; exit 1; }
fail=0
# file, the include it must be refused for
cases=(
  "cmd_run.cpp|backends/registry.h"
  "cmd_serve.cpp|serve/http_server.h"
  "cmd_inspect.cpp|kiln_schema/plan_generated.h"
  "tp_launch.h|comm/communicator.h"
  "cmd_exec.cpp|core/paged_indices.h"
  "cmd_run.cpp|kiln/not_public.h"
  "cmd_run.cpp|compiler/driver/BuildDriver.h"
  "cmd_verify.cpp|sha256.h"
)
for c in "${cases[@]}"; do
  file=${c%%|*} header=${c#*|}
  path=$tmp/tools/kiln/$file
  cp "$path" "$path.keep" 2>/dev/null
  printf '#include "%s"\n' "$header" >>"$path"
  out=$("$check" "$tmp" 2>&1)
  if [[ $? -eq 0 || "$out" != *"$path:"*"$header"* ]]; then
    echo "FAIL: $file including $header was not refused by name:"; echo "$out"; fail=1
  fi
  if [[ -f "$path.keep" ]]; then mv "$path.keep" "$path"; else rm "$path"; fi
done
# A missing tools folder is an error, not a pass.
rm -r "$tmp/tools/kiln"
if "$check" "$tmp" >/dev/null; then echo "FAIL: a missing tools/kiln passed"; fail=1; fi
[[ $fail -eq 0 ]] && echo "tool header check self-test passed"
exit $fail
