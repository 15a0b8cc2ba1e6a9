#!/usr/bin/env bash
# The kiln tool parses flags and calls the runtime's public API
# (docs/architecture.md, dependency rules). Every quoted include in
# tools/kiln is one of:
#   - a header of tools/kiln itself;
#   - a public runtime header, kiln/NAME.h, that runtime/include/kiln has;
#   - kiln_source_commit.h, which the build generates;
#   - in the compiler's commands alone (cmd_build.cpp, cmd_reshard.cpp,
#     build_common.*): the compiler's headers (compiler/, passes/) and LLVM's.
# Never the runtime's private headers (core/, backends/, engine/, serve/,
# comm/, tokenizer/, chat/), kernels/, or the plan's FlatBuffers
# (kiln_schema/): what tools need of a plan is in kiln/plan_info.h.
# Prints every include that breaks a rule as FILE:LINE and exits 1.
# Usage: check_tool_headers.sh SOURCE_ROOT
set -uo pipefail
src=${1:?usage: check_tool_headers.sh SOURCE_ROOT}
tools=$src/tools/kiln
public=$src/runtime/include
if [[ ! -d "$tools" || ! -d "$public/kiln" ]]; then
  echo "FAIL: $tools or $public/kiln is missing (update test/deps/check_tool_headers.sh)"
  exit 1
fi
fail=0
checked=0
while IFS= read -r hit; do
  [[ -z "$hit" ]] && continue
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  header=$(sed -E 's/^[^"]*"([^"]+)".*/\1/' <<<"${rest#*:}")
  base=$(basename "$file")
  checked=$((checked + 1))
  if [[ -f "$tools/$header" || "$header" == kiln_source_commit.h ]]; then
    continue
  fi
  if [[ "$header" == kiln/* && -f "$public/$header" ]]; then
    continue
  fi
  case "$base" in
    cmd_build.cpp | cmd_reshard.cpp | build_common.h | build_common.cpp)
      [[ "$header" == compiler/* || "$header" == passes/* || "$header" == llvm/* ]] && continue ;;
  esac
  echo "$file:$line: tools/kiln must not include \"$header\": call the runtime's public" \
       "API (runtime/include/kiln) instead"
  fail=1
done < <(grep -rnE '^\s*#\s*include\s*"' "$tools" --include='*.h' --include='*.cpp')
if [[ $checked -eq 0 ]]; then
  echo "FAIL: no include found under $tools"; fail=1
fi
[[ $fail -eq 0 ]] && echo "tool header check passed ($checked includes)"
exit $fail
