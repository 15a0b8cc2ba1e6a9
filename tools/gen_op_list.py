#!/usr/bin/env python3
"""Writes runtime/src/core/ops.def, the runtime's list of the ops a plan can
hold, from the dialect's .td files.

    tools/gen_op_list.py [--tblgen LLVM_TBLGEN] [--mlir-include DIR]... [--check]

Every op of the kiln dialect derives from Kiln_OpTable (compiler/dialect/
KilnDialect.td), which gives its family and its half-precision rule. This
script runs llvm-tblgen --dump-json over the dialect's top-level .td files,
reads those records, and writes one KILN_OP line per op. The runtime includes
the committed file (the runtime-only build has no MLIR and no TableGen);
the compiler build's test op_list_current runs this with --check, which fails
naming every op whose line differs, so the committed list cannot go stale,
and also fails for an op that docs/ops.md, docs/fused-ops.md and
docs/tensor-parallel.md do not name.

Exit status: 0 written (or current with --check), 1 stale (--check), 2 bad
input (an op without a Kiln_OpTable entry, an unknown family or rule, a
missing tool).
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOCS = ["docs/ops.md", "docs/fused-ops.md", "docs/tensor-parallel.md"]
TD_FILES = ["compiler/dialect/KilnOps.td", "compiler/dialect/KilnCollectiveOps.td"]
OUTPUT = "runtime/src/core/ops.def"
FAMILIES = ["pointwise", "movement", "gather", "reduce", "norm", "products", "attention",
            "collective"]
HALF_RULES = {"native": "Native", "f32": "F32"}

HEADER = """\
// Every op a plan can hold, one line each: KILN_OP(Id, "name", Family, Half).
// Written by tools/gen_op_list.py from the dialect's Kiln_OpTable records
// (compiler/dialect/*.td). Do not edit: change the op's .td entry and run
// tools/gen_op_list.py; the compiler build's test op_list_current fails
// while this file differs from what the .td files say.
//
//   Id      the op's enumerator, kiln::OpId::k<Id> (core/op_list.h)
//   name    its name in plans, the dialect's mnemonic
//   Family  the files that hold its shape rule and kernels (core/op_list.h
//           OpFamily: Pointwise, Movement, Gather, Reduce, Norm, Products,
//           Attention, Collective)
//   Half    F32: f16/bf16 operands are computed in f32 and the results keep
//           the operands' type; Native: kernels read and write half as is
//
// clang-format off
"""


def fail(msg, code=2):
    print(f"gen_op_list: {msg}", file=sys.stderr)
    sys.exit(code)


def find_tblgen(given):
    if given:
        return given
    for name in ("llvm-tblgen-19", "llvm-tblgen"):
        path = shutil.which(name)
        if path:
            return path
    path = Path("/usr/lib/llvm-19/bin/llvm-tblgen")
    if path.exists():
        return str(path)
    fail("llvm-tblgen not found (package llvm-19-dev); pass --tblgen")


def find_mlir_include(given):
    dirs = [d for d in given or [] if d]
    if any((Path(d) / "mlir" / "IR" / "OpBase.td").is_file() for d in dirs):
        return dirs
    if (Path("/usr/lib/llvm-19/include") / "mlir" / "IR" / "OpBase.td").is_file():
        return dirs + ["/usr/lib/llvm-19/include"]
    fail("MLIR's .td files not found (package libmlir-19-dev); pass --mlir-include")


def dialect_ops(tblgen, mlir_include, root):
    """(def name, record) for every op of the kiln dialect."""
    ops = {}
    includes = [a for d in mlir_include for a in ("-I", d)]
    with tempfile.TemporaryDirectory() as tmp:
        for td in TD_FILES:
            out = Path(tmp) / "records.json"
            r = subprocess.run([tblgen, "--dump-json", *includes, "-I", str(root),
                                str(root / td), "-o", str(out)], capture_output=True, text=True,
                               cwd=root)  # includes resolve against the cwd first
            if r.returncode != 0:
                fail(f"{tblgen} --dump-json {td} failed:\n{r.stderr.strip()}")
            records = json.loads(out.read_text())
            for name in records["!instanceof"].get("Op", []):
                rec = records[name]
                if (rec.get("opDialect") or {}).get("def") == "Kiln_Dialect":
                    ops[name] = rec
    if not ops:
        fail("no op of Kiln_Dialect in " + ", ".join(TD_FILES))
    return ops


def op_id(def_name):
    m = re.fullmatch(r"Kiln_(\w+)Op", def_name)
    if not m:
        fail(f"{def_name}: an op's def must be named Kiln_<Name>Op")
    return m.group(1)


def render(ops):
    lines, errors = [], []
    for def_name, rec in sorted(ops.items(), key=lambda kv: kv[1]["opName"]):
        name = rec["opName"]
        if "Kiln_OpTable" not in rec["!superclasses"]:
            errors.append(f"{def_name} ('{name}') has no Kiln_OpTable entry: give it one "
                          f"(compiler/dialect/KilnDialect.td says how)")
            continue
        family, half = rec["opTableFamily"], rec["opTableHalf"]
        if family == "":
            continue  # never reaches a plan
        if family not in FAMILIES:
            errors.append(f"{def_name} ('{name}'): family '{family}' is none of "
                          + ", ".join(FAMILIES))
            continue
        if half not in HALF_RULES:
            errors.append(f"{def_name} ('{name}'): half rule '{half}' is none of "
                          + ", ".join(HALF_RULES))
            continue
        lines.append(f'KILN_OP({op_id(def_name)}, "{name}", {family.capitalize()}, '
                     f'{HALF_RULES[half]})')
    if errors:
        fail("\n  ".join(["the dialect's op table is incomplete:"] + errors))
    return HEADER + "\n".join(lines) + "\n// clang-format on\n"


def count_ops(text):
    return len(re.findall(r"^KILN_OP\(", text, re.M))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tblgen", help="llvm-tblgen (default: found on PATH or in LLVM 19)")
    ap.add_argument("--mlir-include", action="append",
                    help="an include folder for the MLIR .td files (repeatable)")
    ap.add_argument("--root", type=Path, default=REPO,
                    help="the source tree (default: this script's checkout)")
    ap.add_argument("--check", action="store_true",
                    help=f"compare with {OUTPUT} instead of writing it; exit 1 if it differs")
    args = ap.parse_args()
    text = render(dialect_ops(find_tblgen(args.tblgen), find_mlir_include(args.mlir_include),
                              args.root))
    path = args.root / OUTPUT
    if not args.check:
        path.write_text(text)
        print(f"wrote {OUTPUT} ({count_ops(text)} ops)")
        return 0
    docs = "".join((args.root / d).read_text(encoding="utf-8") for d in DOCS
                   if (args.root / d).exists())
    undocumented = [n for n in re.findall(r'^KILN_OP\(\w+, "(\w+)"', text, re.M)
                    if f"`{n}`" not in docs]
    if undocumented:
        print("ops no doc names (as `name` in " + ", ".join(DOCS) + "): "
              + ", ".join(undocumented), file=sys.stderr)
        return 1
    old = path.read_text() if path.exists() else ""
    if old == text:
        print(f"{OUTPUT} is current ({count_ops(text)} ops, each documented)")
        return 0
    want = {l for l in text.splitlines() if l.startswith("KILN_OP(")}
    have = {l for l in old.splitlines() if l.startswith("KILN_OP(")}
    print(f"{OUTPUT} is stale: run tools/gen_op_list.py", file=sys.stderr)
    for l in sorted(want - have):
        print(f"  missing: {l}", file=sys.stderr)
    for l in sorted(have - want):
        print(f"  not in the .td files: {l}", file=sys.stderr)
    if want == have:
        print("  (the op lines agree; the header or order differs)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
