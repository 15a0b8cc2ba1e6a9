#!/usr/bin/env bash
# The machine's memory read bandwidth for 1..T threads (tools/bench/membw.cpp),
# the ceiling of a weight-streaming CPU decode.
# Usage: membw.sh [max threads] [GB buffer]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
g++ -O3 -mavx2 -DNDEBUG -std=c++17 "$here/membw.cpp" -o "$out/membw" -lpthread
"$out/membw" "$@"
