#!/usr/bin/env python3
"""int8 plans (kiln build --int8: weight-only int8, one scale per column)
against the fp32 plan, on decoder fixtures.

For each fixture, over one fixed token sequence (as half_plans.py picks it):
  1. kiln build the fp32 plan and the --int8 plan (the fixture's default
     interface);
  2. kiln inspect: the int8 plan has int8 weights, and each linear and
     gated_mlp of the fp32 plan became linear_q8 and gated_mlp_q8 (same
     count, no f32 projection left); its other ops are the fp32 plan's;
  3. teacher-forced logits for every position (one kiln exec) within
     REL_TOL of the fp32 plan's (max-norm of the difference over the
     max-norm of the fp32 logits, per position), and the same argmax on at
     least TOP1_MIN of the positions;
  4. kiln run (the engine) on half the sequence: last-position logits within
     the same bound, with weight packing on and off (KILN_CPU_PACK=0: the
     kernels widen the int8 weight instead of reading packed panels);
  5. --int8-activations (activation rows quantized too): within REL_TOL_ACT
     and TOP1_MIN_ACT of the fp32 plan, and not the weight-only plan's logits;
  6. bad configs are refused, naming the conflict: --int8 with --dtype bf16
     and with --tp-size 2; --int8 --no-inject builds, warning that no weight
     became int8.
Prints `int8 <fixture> <interface> max_rel <x> top1 <y>` per fixture.
"""
import json
import os
import subprocess
import sys

import numpy as np

from half_plans import Fixture, rel_per_position, run_fixtures

# Weight-only int8 with per-column scales rounds each weight by at most
# max|column| / 254. On these fixtures the logits move by up to REL_TOL of
# their max-norm (measured values are in docs/build-config.md#quant).
REL_TOL = 5e-2
TOP1_MIN = 0.9
# With the activation rows quantized too (--int8-activations).
REL_TOL_ACT = 1e-1
TOP1_MIN_ACT = 0.85


class Int8Fixture(Fixture):
    def build_int8(self, extra=()):
        plan = self.tmp / f"{self.dir.name}-int8.plan"
        r = self.run(self.builder, ["build", str(self.dir / "model.onnx"), "-o", str(plan),
                                    "--quiet", "--int8", *extra])
        return plan, r

    def inspect(self, plan):
        r = self.run(self.kiln, ["inspect", str(plan), "--json"])
        if not self.check(r.returncode == 0, f"{self.dir.name}: kiln inspect {plan.name}"):
            return None
        return json.loads(r.stdout)

    def check_ops(self, info, qinfo, where):
        ops, qops = info["op_counts"], qinfo["op_counts"]
        for f32_op, q_op in (("linear", "linear_q8"), ("gated_mlp", "gated_mlp_q8")):
            self.check(qops.get(q_op, 0) == ops.get(f32_op, 0) and qops.get(f32_op, 0) == 0,
                       f"{where}: {ops.get(f32_op, 0)} {f32_op} became {qops.get(q_op, 0)} "
                       f"{q_op} ({qops.get(f32_op, 0)} left)")
        rest = {k: v for k, v in ops.items() if k not in ("linear", "gated_mlp")}
        qrest = {k: v for k, v in qops.items() if k not in ("linear_q8", "gated_mlp_q8")}
        self.check(rest == qrest, f"{where}: the other ops are the fp32 plan's "
                   f"({rest} vs {qrest})")
        i8 = qinfo["weight_dtypes"].get("i8", {}).get("bytes", 0)
        f32 = info["weight_dtypes"].get("f32", {}).get("bytes", 0)
        self.check(0 < i8 < f32 / 4 + 1, f"{where}: {i8} bytes of int8 weights "
                   f"(fp32 plan: {f32} bytes of f32)")

    def engine(self, plan, where, full, pack):
        n = len(self.ids) // 2
        dump = self.tmp / f"{plan.stem}-run-{pack}.npy"
        env = dict(os.environ, KILN_CPU_PACK=pack)
        r = subprocess.run([self.kiln, "run", str(plan), "--prompt-ids",
                            ",".join(map(str, self.ids[:n])), "--max-new-tokens", "1",
                            "--temperature", "0", "--no-stream", "--dump-logits", str(dump)],
                           capture_output=True, text=True, env=env)
        if not self.check(r.returncode == 0, f"{where}: kiln run KILN_CPU_PACK={pack} "
                          f"(exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return None
        got = np.load(dump)
        rel = float(rel_per_position(got[:1], full[n - 1:n])[0])
        self.check(rel <= REL_TOL, f"{where}: kiln run (KILN_CPU_PACK={pack}) logits after "
                   f"{n} prompt tokens, rel {rel:.2e} to the fp32 plan's")
        return got

    def int8_activations(self, where, full, weight_only):
        """--int8-activations: the same int8 weights, activation rows quantized
        too; within REL_TOL_ACT of fp32, and not equal to the weight-only
        plan's logits (the int8 x int8 path ran)."""
        plan = self.tmp / f"{self.dir.name}-int8-act.plan"
        r = self.run(self.builder, ["build", str(self.dir / "model.onnx"), "-o", str(plan),
                                    "--quiet", "--int8-activations"])
        if not self.check(r.returncode == 0, f"{where}: kiln build --int8-activations "
                          f"(exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return
        info = self.inspect(plan)
        if info is None:
            return
        got = self.logits(plan, info, info["interface"] == "ragged")
        if got is None:
            return
        rel = rel_per_position(got, full)
        top1 = float(np.mean(np.argmax(got, -1) == np.argmax(full, -1)))
        moved = float(rel_per_position(got, weight_only.astype(np.float64)).max())
        self.check(float(rel.max()) <= REL_TOL_ACT, f"{where} activations: max over {len(rel)} "
                   f"positions of max|int8 - fp32| / max|fp32| = {rel.max():.2e}")
        self.check(top1 >= TOP1_MIN_ACT, f"{where} activations: top-1 agrees on {top1:.1%}")
        self.check(moved > 0, f"{where} activations: differ from the weight-only plan's "
                   f"(rel {moved:.2e})")
        print(f"int8-act {self.dir.name} max_rel {rel.max():.3e} top1 {top1:.4f}")

    def test(self):
        plan, info = self.build("fp32", dense=False)
        if plan is None:
            return
        interface = info["interface"]
        where = f"{self.dir.name} {interface} int8"
        full = self.logits(plan, info, interface == "ragged")
        qplan, r = self.build_int8()
        if not self.check(r.returncode == 0, f"{where}: kiln build --int8 (exit {r.returncode}) "
                          f"{r.stderr.strip()[-300:]}"):
            return
        qinfo = self.inspect(qplan)
        if qinfo is None:
            return
        self.check_ops(info, qinfo, where)
        got = self.logits(qplan, qinfo, interface == "ragged")
        if got is None or full is None:
            return
        rel = rel_per_position(got, full)
        top1 = float(np.mean(np.argmax(got, -1) == np.argmax(full, -1)))
        self.check(float(rel.max()) <= REL_TOL, f"{where}: max over {len(rel)} positions of "
                   f"max|int8 - fp32| / max|fp32| = {rel.max():.2e}")
        self.check(top1 >= TOP1_MIN, f"{where}: top-1 agrees on {top1:.1%} of positions")
        print(f"int8 {self.dir.name} {interface} max_rel {rel.max():.3e} top1 {top1:.4f}")
        packed = self.engine(qplan, where, full, "1")
        widened = self.engine(qplan, where, full, "0")
        if packed is not None and widened is not None:
            diff = float(rel_per_position(packed[:1], widened[:1].astype(np.float64))[0])
            self.check(diff <= 1e-4, f"{where}: packed and widened int8 kernels agree "
                       f"(rel {diff:.2e})")
        self.int8_activations(where, full, got)
        # Without injection there is no projection to quantize: built, with
        # a warning that says so.
        _, r = self.build_int8(["--no-inject"])
        self.check(r.returncode == 0 and "no weight is int8" in r.stderr,
                   f"{self.dir.name}: --int8 --no-inject warns that nothing became int8 "
                   f"(exit {r.returncode}): {r.stderr.strip()[-200:]}")
        for extra, want in ((["--dtype", "bf16"], "not supported yet with dtype bf16"),
                            (["--tp-size", "2"], "not supported yet with tensor_parallel")):
            _, r = self.build_int8(extra)
            self.check(r.returncode == 2 and want in r.stderr,
                       f"{self.dir.name}: --int8 {' '.join(extra)} refused (exit {r.returncode}): "
                       f"{r.stderr.strip()[-200:]}")


if __name__ == "__main__":
    sys.exit(run_fixtures(__doc__, Int8Fixture, "kiln-int8-"))
