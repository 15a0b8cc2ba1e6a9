# Sourced by the GPU machine's scripts (tools/gpu/run_8b.sh; docs/gpu.md):
#   . tools/gpu/bundle_env.sh
# Unpacks build/gpu-bundle.tar.xz (KILN_GPU_BUNDLE_TAR) into build/gpu-bundle
# (KILN_GPU_BUNDLE) when the archive is newer than the last unpacking, and
# finds libcublasLt.so.13 and libnccl.so.2 (the CUDA toolkit's, else the ones
# pip put beside torch) for LD_LIBRARY_PATH, since the bundle carries no CUDA
# or NCCL library. Sets KILN_GPU_BUNDLE, KILN (its kiln) and LD_LIBRARY_PATH;
# returns non-zero, saying why, when there is no bundle or no cuBLASLt.

# The folder holding library $1: the CUDA toolkit's, else pip's wheels
# beside torch (the folders $2..., under site-packages), else the loader's.
kiln_find_lib() {
  local lib=$1 d
  shift
  for d in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-*/lib64; do
    if [ -e "$d/$lib" ]; then echo "$d"; return; fi
  done
  d=$(${PYTHON:-python3} - "$lib" "$@" 2>/dev/null <<'EOF'
import glob, os, sys
for p in sys.path:
    for pat in sys.argv[2:]:
        d = os.path.join(p, pat)
        if glob.glob(os.path.join(d, sys.argv[1])):
            print(d)
            sys.exit(0)
EOF
)
  if [ -z "$d" ]; then
    d=$(ldconfig -p 2>/dev/null | awk -v lib="$lib" '$1 == lib {print $NF; exit}')
    d=${d:+$(dirname "$d")}
  fi
  echo "$d"
}

kiln_add_lib_path() {
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$1:"*) ;;
    *) export LD_LIBRARY_PATH=$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  esac
}

kiln_bundle_env() {
  local root tar dir parent tmp d
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  tar=${KILN_GPU_BUNDLE_TAR:-$root/build/gpu-bundle.tar.xz}
  dir=${KILN_GPU_BUNDLE:-$root/build/gpu-bundle}
  # A folder this script did not unpack (a build tree, say) is never
  # replaced: it is used as the bundle as it is, or refused.
  if [ -d "$dir" ] && [ ! -f "$dir/.unpacked" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
    if [ ! -x "$dir/bin/kiln" ]; then
      echo "bundle_env.sh: $dir is not an unpacked bundle (no .unpacked, no bin/kiln); not replacing it" >&2
      return 1
    fi
  elif [ -f "$tar" ] && { [ ! -f "$dir/.unpacked" ] || [ "$tar" -nt "$dir/.unpacked" ]; }; then
    parent=$(dirname "$dir")
    mkdir -p "$parent"
    tmp=$(mktemp -d "$parent/.gpu-bundle.XXXXXX")
    if ! tar -C "$tmp" -xJf "$tar"; then
      rm -rf "$tmp"
      echo "bundle_env.sh: cannot unpack $tar" >&2
      return 1
    fi
    rm -rf "$dir"
    mv "$tmp/gpu-bundle" "$dir"
    rmdir "$tmp"
    touch "$dir/.unpacked"
    echo "bundle_env.sh: unpacked $tar into $dir" >&2
  fi
  if [ ! -x "$dir/bin/kiln" ]; then
    echo "bundle_env.sh: no bundle at $dir (make gpu-bundle here, carry build/gpu-bundle.tar.xz)" >&2
    return 1
  fi
  KILN_GPU_BUNDLE=$(cd "$dir" && pwd)
  KILN=$KILN_GPU_BUNDLE/bin/kiln
  export KILN_GPU_BUNDLE KILN

  local found nccl
  found=$(kiln_find_lib libcublasLt.so.13 nvidia/cu13/lib nvidia/cublas/lib)
  if [ -z "$found" ]; then
    echo "bundle_env.sh: no libcublasLt.so.13 (CUDA toolkit or pip nvidia-cublas); set CUDA_HOME" >&2
    return 1
  fi
  kiln_add_lib_path "$found"
  # NCCL: the bundle does not carry it (200 MiB).
  nccl=$(kiln_find_lib libnccl.so.2 nvidia/nccl/lib nvidia/cu13/lib)
  if [ -n "$nccl" ]; then
    kiln_add_lib_path "$nccl"
  else
    echo "bundle_env.sh: no libnccl.so.2 found: the NCCL communicator will not load" >&2
  fi
  echo "bundle_env.sh: kiln $KILN, cuBLASLt from $found, NCCL from ${nccl:-nowhere}" >&2
}

kiln_bundle_env
