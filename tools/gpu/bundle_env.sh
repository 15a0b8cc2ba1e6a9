# Sourced by the GPU machine's scripts (tools/gpu/run_8b.sh; docs/gpu.md):
#   . tools/gpu/bundle_env.sh
# Unpacks build/gpu-bundle.tar.xz (KILN_GPU_BUNDLE_TAR) into build/gpu-bundle
# (KILN_GPU_BUNDLE) when the archive is newer than the last unpacking, and
# finds libcublasLt.so.13 (the CUDA toolkit's, else the one pip's
# nvidia-cublas put beside torch) for LD_LIBRARY_PATH, since the bundle carries
# no CUDA library. Sets KILN_GPU_BUNDLE, KILN (its kiln) and LD_LIBRARY_PATH;
# returns non-zero, saying why, when there is no bundle or no cuBLASLt.

kiln_bundle_env() {
  local root tar dir parent tmp d
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  tar=${KILN_GPU_BUNDLE_TAR:-$root/build/gpu-bundle.tar.xz}
  dir=${KILN_GPU_BUNDLE:-$root/build/gpu-bundle}
  if [ -f "$tar" ] && { [ ! -f "$dir/.unpacked" ] || [ "$tar" -nt "$dir/.unpacked" ]; }; then
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

  local found=""
  for d in ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           /usr/local/cuda-*/lib64; do
    if [ -e "$d/libcublasLt.so.13" ]; then found=$d; break; fi
  done
  if [ -z "$found" ]; then
    # pip's nvidia-cublas (cu13 wheels: nvidia/cu13/lib; older: nvidia/cublas/lib).
    found=$(${PYTHON:-python3} - 2>/dev/null <<'EOF'
import glob, os, sys
for p in sys.path:
    for pat in ("nvidia/cu13/lib", "nvidia/cublas/lib"):
        d = os.path.join(p, pat)
        if glob.glob(os.path.join(d, "libcublasLt.so.13")):
            print(d)
            sys.exit(0)
EOF
)
  fi
  if [ -z "$found" ]; then
    found=$(ldconfig -p 2>/dev/null | awk '/libcublasLt\.so\.13 /{print $NF; exit}')
    found=${found:+$(dirname "$found")}
  fi
  if [ -z "$found" ]; then
    echo "bundle_env.sh: no libcublasLt.so.13 (CUDA toolkit or pip nvidia-cublas); set CUDA_HOME" >&2
    return 1
  fi
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$found:"*) ;;
    *) export LD_LIBRARY_PATH=$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  esac
  # NCCL (the bundle does not carry it: 200 MiB): the toolkit's, pip's
  # nvidia-nccl beside torch, or the loader's.
  local nccl=""
  for d in "$found" ${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64; do
    if [ -e "$d/libnccl.so.2" ]; then nccl=$d; break; fi
  done
  if [ -z "$nccl" ]; then
    nccl=$(${PYTHON:-python3} - 2>/dev/null <<'EOF'
import glob, os, sys
for p in sys.path:
    for pat in ("nvidia/nccl/lib", "nvidia/cu13/lib"):
        d = os.path.join(p, pat)
        if glob.glob(os.path.join(d, "libnccl.so.2")):
            print(d)
            sys.exit(0)
EOF
)
  fi
  if [ -z "$nccl" ]; then
    nccl=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
    nccl=${nccl:+$(dirname "$nccl")}
  fi
  if [ -n "$nccl" ]; then
    case ":${LD_LIBRARY_PATH:-}:" in
      *":$nccl:"*) ;;
      *) export LD_LIBRARY_PATH=$nccl:$LD_LIBRARY_PATH ;;
    esac
  else
    echo "bundle_env.sh: no libnccl.so.2 found: the NCCL communicator will not load" >&2
  fi
  echo "bundle_env.sh: kiln $KILN, cuBLASLt from $found, NCCL from ${nccl:-nowhere}" >&2
}

kiln_bundle_env
