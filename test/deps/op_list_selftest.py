#!/usr/bin/env python3
"""tools/gen_op_list.py --check must fail, naming the op, when the committed
op list (runtime/src/core/ops.def) is stale, when an op of the dialect has no
Kiln_OpTable entry or an unknown family, and when no doc names an op. Runs
the script on a copy of the files it reads, changed one way at a time.

    op_list_selftest.py [--tblgen LLVM_TBLGEN] [--mlir-include DIR]...
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = ["runtime/src/core/ops.def", "docs/ops.md", "docs/fused-ops.md",
         "docs/tensor-parallel.md"]
failures = []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tblgen")
    ap.add_argument("--mlir-include", action="append", default=[])
    args = ap.parse_args()
    extra = (["--tblgen", args.tblgen] if args.tblgen else []) + \
        [a for d in args.mlir_include for a in ("--mlir-include", d)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "compiler" / "dialect", root / "compiler" / "dialect")
        for f in FILES:
            (root / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / f, root / f)

        def check(what, path, old, new, want_rc, want_text):
            p = root / path
            original = p.read_text()
            if old not in original:
                failures.append(f"{what}: '{old}' not in {path}")
                return
            p.write_text(original.replace(old, new, 1))
            r = subprocess.run([sys.executable, str(REPO / "tools" / "gen_op_list.py"), "--check",
                                "--root", str(root), *extra], capture_output=True, text=True)
            p.write_text(original)
            ok = r.returncode == want_rc and want_text in r.stderr + r.stdout
            print(("ok   " if ok else "FAIL ") + f"{what}: exit {r.returncode}, "
                  f"{(r.stderr or r.stdout).strip()[:200]!r}")
            if not ok:
                failures.append(what)

        check("current", "docs/ops.md", "", "", 0, "is current")
        check("an op without an entry", "compiler/dialect/KilnOps.td",
              'def Kiln_WhereOp : Kiln_Op<"where">, Kiln_OpTable<"pointwise"> {',
              'def Kiln_WhereOp : Kiln_Op<"where"> {', 2, "Kiln_WhereOp ('where') has no")
        check("an unknown family", "compiler/dialect/KilnTensorOps.td",
              'Kiln_OpTable<"gather">', 'Kiln_OpTable<"gathr">', 2, "family 'gathr'")
        check("a changed family", "compiler/dialect/KilnTensorOps.td",
              'def Kiln_TileOp : Kiln_Op<"tile">, Kiln_OpTable<"movement">',
              'def Kiln_TileOp : Kiln_Op<"tile">, Kiln_OpTable<"gather">', 1,
              'missing: KILN_OP(Tile, "tile", Gather, Native)')
        check("a line edited by hand", "runtime/src/core/ops.def",
              'KILN_OP(Tile, "tile", Movement, Native)', 'KILN_OP(Tile, "tile", Movement, F32)', 1,
              'not in the .td files: KILN_OP(Tile, "tile", Movement, F32)')
        check("an undocumented op", "docs/ops.md", "`trilu`", "trilu", 1, "trilu")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
