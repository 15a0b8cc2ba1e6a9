#!/usr/bin/env bash
# The runtime must never include or link MLIR, LLVM, protobuf or ONNX.
# 1. No runtime/ or kernels/ source includes their headers.
# 2. No runtime library (every one given) references their symbols.
# 3. In a KILN_BUILD_COMPILER=OFF build, the kiln tool links none of their
#    shared libraries.
# 4. The engine sits below the public pipeline: nothing in runtime/src/engine
#    but pipeline.cpp, which implements it, includes kiln/pipeline.h.
# 5. runtime/src/core/ (plan loader, executor, shape table) is backend-neutral:
#    it includes no backend, no backend's kernels and not the engine
#    (docs/architecture.md, dependency rules). The one exception is an op
#    list of kernels/ (kernels/*.def: data, no code), which the shape rules
#    iterate as the kernels do.
# 6. The engine and the server are backend-neutral too: runtime/src/engine
#    and runtime/src/serve include no kernel and no specific backend (they
#    reach one through core/backend.h and backends/registry.h; the device
#    sampler's records are core/sampling_contract.h).
set -uo pipefail
# Usage: check_runtime_deps.sh SOURCE_ROOT KILN_TOOL COMPILER_ON LIBRARY...
src=$1 kiln_tool=$2 compiler_on=$3
shift 3
libs=("$@")
fail=0
if grep -rnE '#\s*include\s*[<"](mlir/|llvm/|google/protobuf|onnx/)' "$src/runtime" "$src/kernels"; then
  echo "FAIL: forbidden include in runtime/ or kernels/"; fail=1
fi
if grep -rlE '#\s*include\s*"kiln/pipeline\.h"' "$src/runtime/src/engine" | grep -v '/pipeline\.cpp$'; then
  echo "FAIL: the engine includes the public pipeline header kiln/pipeline.h"; fail=1
fi
if grep -rnE '#\s*include\s*[<"](backends|kernels|engine)/' "$src/runtime/src/core" |
    grep -vE '#\s*include\s*"kernels/[a-z_]+\.def"'; then
  echo "FAIL: runtime/src/core includes backends/, kernels/ or engine/ (above); core must stay" \
       "backend-neutral: shape rules and operand checks go in core/shapes/, kernels in" \
       "backends/<name>/, and a backend reaches core only through core/backend.h"; fail=1
fi
if grep -rnE '#\s*include\s*"(kernels/|backends/[a-z]+/)' "$src/runtime/src/engine" "$src/runtime/src/serve"; then
  echo "FAIL: runtime/src/engine or runtime/src/serve includes a kernel or a specific backend" \
       "(above): shared records go in core/ (e.g. core/sampling_contract.h), backends are" \
       "reached through core/backend.h and backends/registry.h"; fail=1
fi
if [[ ${#libs[@]} -eq 0 ]]; then
  echo "FAIL: no runtime library given"; fail=1
fi
for lib in "${libs[@]}"; do
  if [[ ! -f "$lib" ]]; then
    echo "FAIL: $lib does not exist"; fail=1
  elif nm -C --undefined-only "$lib" 2>/dev/null | grep -E ' (mlir|llvm|google::protobuf|onnx)::' | head -5 | grep -q .; then
    echo "FAIL: $lib references MLIR/LLVM/protobuf/ONNX symbols"; fail=1
  fi
done
if [[ "$compiler_on" != "ON" ]]; then
  if ldd "$kiln_tool" | grep -iE 'libMLIR|libLLVM|libprotobuf|libonnx'; then
    echo "FAIL: runtime-only kiln links a compiler library"; fail=1
  fi
  if "$kiln_tool" build x.onnx -o x.plan >/dev/null 2>&1; then
    echo "FAIL: runtime-only kiln accepted 'build'"; fail=1
  fi
fi
[[ $fail -eq 0 ]] && echo "runtime dependency check passed"
exit $fail
