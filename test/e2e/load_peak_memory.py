#!/usr/bin/env python3
"""Loading a plan on the CPU never holds both forms of its product weights.

The CPU backend packs every product weight into its own copy at load and
hands the plan's mapped pages of it back (docs/engine.md, "Packed weights").
Handed back one weight at a time, as each is packed, the process's peak
resident memory stays near one copy of the weights; handed back only after
the last one, it reached both (2x).

Generates (in a temporary folder) an ONNX chain of LAYERS MatMuls with
[DIM, DIM] f32 weights of arbitrary values (about 400 MB), builds it, runs
it once with `kiln exec` and checks:
  1. the output equals numpy's chain within f32 rounding;
  2. kiln exec's peak RSS (wait4), less that of `kiln --help` (the binary
     and its libraries: over 200 MB where cuBLASLt is linked), is at most
     PEAK_MAX times the weights;
  3. with the same weights rounded to bf16 values (packed in bf16 on load),
     that is at most BF16_PEAK_MAX times the f32 weights: well under one
     f32 copy, so the narrowing happened too.
Run in a build without sanitizers (their shadow memory counts in RSS).
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import Checks

DIM = 2048
LAYERS = 24          # 24 x 16 MiB = 384 MiB of f32 weights
PEAK_MAX = 1.3       # both forms at once: 1.8x measured
BF16_PEAK_MAX = 0.7  # packed in bf16, half the bytes: 0.4x measured (f32-packed: 0.9x)


def make_model(folder, weights):
    nodes, inits = [], []
    for i, w in enumerate(weights):
        src = "x" if i == 0 else f"h{i}"
        dst = "y" if i == len(weights) - 1 else f"h{i + 1}"
        nodes.append(helper.make_node("MatMul", [src, f"w{i}"], [dst], name=f"mm{i}"))
        inits.append(numpy_helper.from_array(w, f"w{i}"))
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, DIM])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, DIM])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(folder / "model.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="model.onnx_data")


def peak_rss(cmd):
    """(exit code, stderr, peak RSS in bytes) of one child process."""
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, err.read().decode(errors="replace"), usage.ru_maxrss * 1024


def make(folder, kind):
    """Writes the chain's model (weights of `kind` values), its input x.pb and
    numpy's output want.npy into `folder`. Run as a child process: a process's
    peak RSS carries over into the children it starts (Linux keeps the
    high-water mark across fork and exec), so the test's own process must
    never hold the weights."""
    rng = np.random.default_rng(7)
    # Scaled so that the chain's values stay near 1.
    ws = [(rng.standard_normal((DIM, DIM), dtype=np.float32) / np.sqrt(DIM)).astype(np.float32)
          for _ in range(LAYERS)]
    if kind == "bf16":
        ws = [((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
              for b in (w.view(np.uint32) for w in ws)]
    x = rng.standard_normal((1, DIM), dtype=np.float32)
    make_model(folder, ws)
    (folder / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    want = x.astype(np.float64)
    for w in ws:
        want = want @ w.astype(np.float64)
    np.save(folder / "want.npy", want)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builder", help="kiln with the compiler")
    ap.add_argument("--kiln", help="kiln to run the plan with")
    ap.add_argument("--make", nargs=2, metavar=("DIR", "KIND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:
        make(Path(args.make[0]), args.make[1])
        return 0
    if not args.builder or not args.kiln:
        ap.error("--builder and --kiln are required")
    check = Checks()
    weight_bytes = LAYERS * DIM * DIM * 4
    _, _, base = peak_rss([args.kiln, "--help"])
    with tempfile.TemporaryDirectory(prefix="kiln-load-") as tmp:
        for kind in ("f32", "bf16"):
            folder = Path(tmp) / kind
            folder.mkdir()
            r = subprocess.run([sys.executable, __file__, "--make", str(folder), kind],
                               capture_output=True, text=True)
            if not check(r.returncode == 0, f"{kind}: the model made "
                         f"{r.stderr.strip()[-300:] if r.returncode else ''}"):
                continue
            plan = folder / "chain.plan"
            r = subprocess.run([args.builder, "build", str(folder / "model.onnx"), "-o", str(plan),
                                "--quiet"], capture_output=True, text=True)
            if not check(r.returncode == 0, f"{kind}: kiln build (exit {r.returncode}) "
                         f"{r.stderr.strip()[-300:] if r.returncode else ''}"):
                continue
            out_dir = folder / "out"
            code, err, peak = peak_rss([args.kiln, "exec", str(plan), "--input",
                                        f"x={folder / 'x.pb'}", "--output-dir", str(out_dir)])
            if not check(code == 0, f"{kind}: kiln exec (exit {code}) "
                         f"{err.strip()[-300:] if code else ''}"):
                continue
            t = TensorProto()
            t.ParseFromString((out_dir / "y.pb").read_bytes())
            got = numpy_helper.to_array(t)
            want = np.load(folder / "want.npy")
            err_max = float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))
            check(err_max < 1e-4, f"{kind}: the chain's output matches numpy (rel {err_max:.1e})")
            limit = PEAK_MAX if kind == "f32" else BF16_PEAK_MAX
            extra = peak - base
            check(extra <= limit * weight_bytes,
                  f"{kind}: kiln exec's peak RSS {peak / 2**20:.0f} MiB, {extra / 2**20:.0f} MiB "
                  f"over kiln --help's {base / 2**20:.0f}, is at most {limit}x the "
                  f"{weight_bytes / 2**20:.0f} MiB of f32 weights ({extra / weight_bytes:.2f}x)")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
