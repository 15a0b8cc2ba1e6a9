#!/usr/bin/env bash
# The compiler's layers (compiler/CMakeLists.txt has the picture) include
# only headers of their own folder and of the layers below them:
#
#   compiler/support   -> (nothing of kiln's compiler)
#   compiler/dialect   -> support
#   compiler/importer  -> dialect, support
#   compiler/plan      -> dialect, support
#   passes             -> plan, dialect, support
#   compiler/driver    -> importer, plan, dialect, support (passes by name only)
#
# Prints every include that breaks a rule as FILE:LINE and exits 1; a layer
# folder that is missing is an error too, so a rename cannot make the check
# pass by finding nothing. Usage: check_compiler_layers.sh SOURCE_ROOT
set -uo pipefail
src=${1:?usage: check_compiler_layers.sh SOURCE_ROOT}

# layer folder -> the folders it may include from (besides itself)
declare -A allowed=(
  [compiler/support]=""
  [compiler/dialect]="compiler/support"
  [compiler/importer]="compiler/dialect compiler/support"
  [compiler/plan]="compiler/dialect compiler/support"
  [passes]="compiler/plan compiler/dialect compiler/support"
  [compiler/driver]="compiler/importer compiler/plan compiler/dialect compiler/support"
)
# What counts as a kiln compiler header: a path under one of these.
layer_pattern='(compiler/[A-Za-z_]+|passes)/'

fail=0
for layer in "${!allowed[@]}"; do
  if [[ ! -d "$src/$layer" ]]; then
    echo "FAIL: $src/$layer is missing (update test/deps/check_compiler_layers.sh)"
    fail=1
    continue
  fi
  ok=" $layer ${allowed[$layer]} "
  while IFS= read -r hit; do
    [[ -z "$hit" ]] && continue
    header=$(sed -E 's/^[^"]*"([^"]+)".*/\1/' <<<"${hit#*:*:}")
    target=$(grep -oE "^$layer_pattern" <<<"$header")
    target=${target%/}
    if [[ "$ok" != *" $target "* ]]; then
      echo "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): $layer must not include $header" \
           "(it may include: $layer ${allowed[$layer]})"
      fail=1
    fi
  done < <(grep -rnE "^\s*#\s*include\s*\"$layer_pattern" "$src/$layer" \
             --include='*.h' --include='*.cpp' --include='*.td' --include='*.inc')
done
[[ $fail -eq 0 ]] && echo "compiler layer check passed"
exit $fail
