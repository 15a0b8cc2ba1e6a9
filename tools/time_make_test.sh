#!/usr/bin/env bash
# Times `make test` and `make check` the way docs/testing.md#build-and-test-time
# reports them, on this checkout's HEAD. Run it on an otherwise idle machine.
#
#   tools/time_make_test.sh cold  DIR   a fresh clone in DIR/cold-N, an empty ccache (DIR/ccache)
#   tools/time_make_test.sh warm  DIR   a fresh clone, in the folder of the last run (deleted
#                                       first: CI clones to one path), with a one-line change
#                                       to runtime/include/kiln/plan.h (included by 49 files
#                                       of the sanitizer build), the ccache the last run left
#                                       and the last clone's .venv
#   tools/time_make_test.sh check DIR   in the last run's clone: a one-line change to a
#                                       runtime source file, then make check
#
# Each writes DIR/<kind>-N.log (the whole output, with make test's phase table
# at the end) and prints the wall time and exit code.
set -euo pipefail
kind=${1:-}
dir=${2:-}
if [[ -z $kind || -z $dir || ! $kind =~ ^(cold|warm|check)$ ]]; then
  echo "usage: $0 cold|warm|check DIR" >&2
  exit 2
fi
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export CCACHE_DIR=$dir/ccache

n=1
while [[ -e $dir/$kind-$n.log ]]; do n=$((n + 1)); done
log=$dir/$kind-$n.log

if [[ $kind == check ]]; then
  clone=$(cat "$dir/last-clone" 2>/dev/null || true)
  if [[ -z $clone ]]; then
    echo "$0: no clone in $dir; run cold or warm first" >&2
    exit 2
  fi
  # A real change (a new declaration), so that no cache can serve it.
  echo "int kiln_check_probe_$(date +%s%N)() { return $n; }" >>"$clone/runtime/src/core/executor.cpp"
  target=check
else
  clone=$dir/$kind-$n
  if [[ $kind == warm ]]; then
    clone=$(cat "$dir/last-clone" 2>/dev/null || true)
    if [[ -z $clone ]]; then
      echo "$0: no earlier run in $dir; run cold first" >&2
      exit 2
    fi
  fi
  # A warm run keeps the last clone's .venv, as a developer's checkout
  # keeps it (setup then only checks it); a cold run makes its own.
  venv_keep=$dir/venv-keep
  rm -rf "$venv_keep"
  if [[ $kind == warm && -d $clone/.venv ]]; then
    mv "$clone/.venv" "$venv_keep"
  fi
  rm -rf "$clone"
  git clone -q "$src" "$clone"
  if [[ -d $venv_keep ]]; then
    mv "$venv_keep" "$clone/.venv"
  fi
  echo "$clone" >"$dir/last-clone"
  if [[ $kind == cold ]]; then
    rm -rf "$CCACHE_DIR"
  elif [[ ! -d $CCACHE_DIR ]]; then
    echo "$0: no ccache in $dir; run cold first" >&2
    exit 2
  else
    # A name of its own per run: the same line again would be served by the
    # cache the previous warm run filled.
    sed -i "0,/^namespace kiln {\$/s//namespace kiln {\ninline constexpr int kWarmRunProbe$(date +%s) = 1;/" \
      "$clone/runtime/include/kiln/plan.h"
  fi
  target=test
fi
mkdir -p "$CCACHE_DIR"
echo "$kind run $n: make $target in $clone (HEAD $(git -C "$clone" rev-parse --short HEAD)), log $log"
t0=$(date +%s)
rc=0
make -C "$clone" "$target" >"$log" 2>&1 || rc=$?
echo "$kind run $n: $(($(date +%s) - t0)) s, exit $rc"
tail -n 16 "$log"
exit $rc
