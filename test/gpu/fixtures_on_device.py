#!/usr/bin/env python3
"""Every fixture on the device under test (default cuda) against the cpu.

For each fixture folder (model.onnx and reference.json; reference.npz when
present), with plans that --builder builds (the default interface, plus
--no-inject for the fixtures --also-no-inject names):
  1. fp32 plan: teacher-forced outputs for every position from one
     `kiln exec` over a fixed sequence (the fixture's 64-token prompt, or its
     generation prompt and ORT's greedy continuation, as half_plans.py uses)
     on the device and on the cpu; every output within FP32_REL of the cpu's
     at every position: max_v |dev - cpu| / max_v |cpu|.
  2. fp32 plan, decoders: greedy generation of --tokens tokens (default 32)
     from the fixture's generation prompt, EOS ignored, on both: the tokens
     equal, and each step's logits within FP32_REL. A ragged plan runs
     through `kiln run` (the engine and its KV cache on the device); a dense
     one (no ragged interface: Gemma, --no-inject) through one `kiln exec`
     over the whole sequence per step.
  3. half plans (--dtypes, default bf16 and fp16), decoders, as half_plans.py
     measures them: the device's teacher-forced logits of the half plan
     against the cpu's logits of the fp32 plan, per position
     max_rel = max_v |half - fp32| / max_v |fp32| and
     l2_rel = ||half - fp32||_2 / ||fp32||_2, and top-1 agreement.
     Gated: top-1 on >= 95% of positions, and the largest max_rel (l2_rel is
     printed, not gated) <= HALF_REL (2e-2), or, where the cpu's own half
     plan (measured beside it) misses 2e-2, <= HALF_SLACK (1.5) times the
     cpu half plan's max_rel; never above half_plans.REL_TOL (bf16 4e-2,
     fp16 2e-2), the bound the cpu's half plans are held to. bfloat16's 8
     significant bits put the cpu's bf16 plans at up to 2.8e-2 max_rel (and
     2.2e-2 l2_rel) on 2 of the 20 decoder fixtures, 2-layer random-weight
     models, mostly from the weights' own rounding
     (docs/build-config.md#half-precision-plans), so 2e-2 cannot hold there
     on any hardware. Then `kiln run` of the half plan on the device
     (ragged plans; its half KV cache on the device) generates --tokens
     tokens, and its first logits are within REL_TOL of the fp32 plan's at
     that position.
Encoder fixtures (no logits output) get step 1 only.

The device: --device, else KILN_TEST_DEVICE, else cuda. Where this kiln was
built without that backend or no CUDA device is visible, the script exits 77
(ctest's SKIP_RETURN_CODE) saying why, unless the device was asked for
(--device or KILN_TEST_DEVICE), when that is a failure. `--device cpu` runs
every check cpu against cpu, which tests the script itself.

Fixtures run in parallel (--jobs), each printing its lines when done: one
per check, and `device <fixture> <variant> ...` summary lines. --summary
writes {"passed", "failed", "skipped"} (checks) as JSON for
tools/gpu/test_gpu.sh. Exits 0, 1 on any failure, 77 when skipped. Needs
numpy and onnx.
"""
import argparse
import concurrent.futures
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
from half_plans import BLOCK, REL_TOL, int_proto, zeros_proto  # noqa: E402

SKIP = 77
# Fixtures whose ops a device backend has no kernel for yet: skipped there,
# counted and named in the summary (not passed).
DEVICE_GAPS = {
    "cuda": {},
}
FP32_REL = 1e-4
HALF_REL = 2e-2
HALF_SLACK = 1.5
TOP1_MIN = 0.95


def rel_per_position(got, want):
    """max_rel and l2_rel of each row (the last axis is the vocabulary or
    the hidden size)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    diff = got - want
    max_rel = np.max(np.abs(diff), -1) / np.maximum(np.max(np.abs(want), -1), 1e-30)
    l2_rel = np.linalg.norm(diff, axis=-1) / np.maximum(np.linalg.norm(want, axis=-1), 1e-30)
    return max_rel, l2_rel


def cuda_device_count():
    """(count, why) from the CUDA driver; count 0 with the reason when there
    is no driver or no device (CUDA_VISIBLE_DEVICES is honoured)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return 0, f"no CUDA driver on this machine ({e})"
    rc = lib.cuInit(0)
    if rc != 0:
        return 0, f"the CUDA driver finds no usable device (cuInit error {rc})"
    n = ctypes.c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(n))
    if rc != 0 or n.value == 0:
        return 0, f"no CUDA device is visible (cuDeviceGetCount error {rc}, count {n.value})"
    return n.value, ""


class FixtureLog:
    """One fixture's checks and lines, printed together when it is done."""

    def __init__(self):
        self.lines, self.failures, self.passed = [], [], 0

    def __call__(self, ok, what):
        self.lines.append(("ok   " if ok else "FAIL ") + what)
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
        return ok

    def require(self, ok, what):
        """A step that must work for the checks after it (a build, a run):
        logged only when it fails."""
        return ok or self(ok, what)

    def note(self, line):
        self.lines.append(line)


class Kiln:
    def __init__(self, kiln, builder):
        self.kiln, self.builder = kiln, builder
        help_text = self.run(["run", "--help"])
        # `--device` once the CUDA backend lands; `--backend` before it.
        self.device_flag = "--device" if "--device" in help_text.stdout + help_text.stderr \
            else "--backend"

    def run(self, args, tool=None):
        return subprocess.run([tool or self.kiln, *map(str, args)], capture_output=True,
                              text=True)

    def built_backends(self, plan):
        """The backends this kiln lists for an unknown one, or None."""
        r = self.run(["exec", plan, self.device_flag, "kiln-no-such-backend"])
        m = re.search(r"built with: ([A-Za-z0-9_:, ]+)", r.stderr)
        return [n.strip() for n in m.group(1).split(",")] if m else None


def exec_inputs(info, ids):
    """TensorProtos for one sequence `ids` from position 0: the model's own
    inputs for a dense plan, one sequence in fresh paged caches for a ragged
    one (as half_plans.py does), token_type_ids zero for encoders."""
    t = len(ids)
    blocks = (t + BLOCK - 1) // BLOCK
    protos = []
    for spec in info["inputs"]:
        name, dtype, shape = spec["name"], spec["dtype"], spec["shape"]
        if name == "input_ids":
            protos.append(int_proto(name, [ids]))
        elif name == "position_ids":
            protos.append(int_proto(name, [list(range(t))]))
        elif name == "attention_mask":
            protos.append(int_proto(name, [[1] * t]))
        elif name == "token_type_ids":
            protos.append(int_proto(name, [[0] * t]))
        elif name in ("kv_slots", "logits_indices"):
            protos.append(int_proto(name, list(range(t))))
        elif name == "query_start":
            protos.append(int_proto(name, [0, t]))
        elif name == "context_lens":
            protos.append(int_proto(name, [t]))
        elif name == "block_tables":
            protos.append(int_proto(name, [list(range(blocks))]))
        elif name.startswith("kv_cache."):
            protos.append(zeros_proto(name, dtype, [blocks, shape[1], BLOCK, shape[3]]))
        elif name.startswith("past_key_values."):
            protos.append(zeros_proto(name, dtype, [1, shape[1], 0, shape[3]]))
        else:
            raise ValueError(f"unknown plan input {name}")
    return protos


class Fixture:
    def __init__(self, args, kiln, folder, tmp, check):
        self.args, self.kiln, self.dir, self.tmp, self.check = args, kiln, folder, tmp, check
        self.ref = json.loads((folder / "reference.json").read_text())
        npz = folder / "reference.npz"
        self.arrays = dict(np.load(npz)) if npz.exists() else {}
        self.counter = 0

    def work_dir(self, tag):
        self.counter += 1
        d = self.tmp / f"{self.dir.name}-{self.counter}-{tag}"
        d.mkdir(parents=True)
        return d

    # -- plans ---------------------------------------------------------------

    def build(self, variant, flags):
        plan = self.tmp / f"{self.dir.name}-{variant}.plan"
        r = self.kiln.run(["build", self.dir / "model.onnx", "-o", plan, "--quiet", *flags],
                          self.kiln.builder)
        if not self.check.require(r.returncode == 0, f"{self.dir.name} {variant}: kiln build "
                          f"{' '.join(flags)} (exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return None, None
        r = self.kiln.run(["inspect", plan, "--json"])
        if not self.check.require(r.returncode == 0, f"{self.dir.name} {variant}: kiln inspect"):
            return None, None
        return plan, json.loads(r.stdout)

    def sequence(self, info):
        """The teacher-forced token sequence: as half_plans.py for decoders;
        an encoder's 64-token case or first text, or fixed ids below its
        vocabulary."""
        for key in ("len64_prompt_ids", "len64_input_ids", "text0_ids"):
            if key in self.arrays:
                return [int(x) for x in self.arrays[key]]
        gen = self.ref.get("generation")
        if gen:
            return list(gen["prompt_ids"]) + list(gen["output_ids"])
        vocab = max(int(info.get("metadata", {}).get("vocab_size", 0)), 2)
        return [1 + (37 * i + 5) % (vocab - 1) for i in range(48)]

    # -- running -------------------------------------------------------------

    def exec(self, plan, info, device, ids, where):
        """Every output of one kiln exec over `ids`, as [positions, -1]
        arrays by name; None when it failed."""
        work = self.work_dir("exec")
        (work / "out").mkdir()
        argv = ["exec", plan, "--output-dir", work / "out", self.kiln.device_flag, device]
        for proto in exec_inputs(info, ids):
            path = work / f"{proto.name}.pb"
            path.write_bytes(proto.SerializeToString())
            argv += ["--input", f"{proto.name}={path}"]
        r = self.kiln.run(argv)
        if not self.check.require(r.returncode == 0, f"{where}: kiln exec on {device} "
                          f"(exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return None
        out = {}
        for spec in info["outputs"]:
            path = work / "out" / (re.sub(r"[^A-Za-z0-9._-]", "_", spec["name"]) + ".pb")
            if not self.check.require(path.exists(), f"{where}: kiln exec on {device} "
                                      f"wrote no {spec['name']}"):
                return None
            a = numpy_helper.to_array(onnx.load_tensor(str(path)))
            out[spec["name"]] = a.reshape(len(ids), -1) if a.size % len(ids) == 0 else a
        return out

    def run_greedy(self, plan, device, prompt, n, where):
        """kiln run, greedy, EOS ignored: (logits [steps, vocab], tokens)."""
        work = self.work_dir("run")
        r = self.kiln.run(["run", plan, "--prompt-ids", ",".join(map(str, prompt)),
                           "--max-new-tokens", n, "--temperature", "0", "--ignore-eos",
                           "--no-stream", "--dump-logits", work / "logits.npy", "--output-ids",
                           work / "ids.json", self.kiln.device_flag, device])
        if not self.check.require(r.returncode == 0, f"{where}: kiln run on {device} "
                          f"(exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return None, None
        return np.load(work / "logits.npy"), json.loads((work / "ids.json").read_text())

    def exec_greedy(self, plan, info, device, prompt, n, where):
        """Greedy generation on a dense plan: one kiln exec over the whole
        sequence per step, the argmax of its last position appended."""
        ids, rows = list(prompt), []
        for _ in range(n):
            out = self.exec(plan, info, device, ids, where)
            if out is None:
                return None, None
            rows.append(out["logits"][-1])
            ids.append(int(np.argmax(rows[-1])))
        return np.stack(rows), ids[len(prompt):]

    # -- checks --------------------------------------------------------------

    def compare_fp32(self, where, name, got, want):
        if not self.check.require(got.shape == want.shape,
                          f"{where}: {name} shape {got.shape} on the device, {want.shape} on cpu"):
            return
        max_rel, l2_rel = rel_per_position(got, want)
        self.check(float(max_rel.max()) <= FP32_REL,
                   f"{where}: {name}, max over {len(max_rel)} positions of max|dev - cpu| / "
                   f"max|cpu| = {max_rel.max():.2e} (worst position {int(max_rel.argmax())})")
        if not name.startswith("present"):  # a dense plan's KV outputs: checked, not summed up
            self.check.note(f"device {self.dir.name} {where.split()[-1]} fp32 {name} max_rel "
                            f"{max_rel.max():.3e} l2_rel {l2_rel.max():.3e}")

    def compare_tokens(self, where, got, want, want_logits):
        ok = self.check(got == want, f"{where}: {len(want)} greedy tokens equal the cpu's")
        if ok:
            return
        step = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                    min(len(got), len(want)))
        if step < len(want_logits):
            top = np.sort(want_logits[step])[-2:]
            margin = (top[1] - top[0]) / max(np.max(np.abs(want_logits[step])), 1e-30)
            self.check.note(f"     first difference at step {step}: device "
                            f"{got[step:step + 4]}, cpu {want[step:step + 4]}; the cpu's top-2 "
                            f"margin there is {margin:.2e} of max|logit|")

    def fp32(self, variant, flags):
        plan, info = self.build(variant, flags)
        if plan is None:
            return None
        dev, ref_dev = self.args.device, self.args.reference
        where = f"{self.dir.name} {variant}"
        ids = self.sequence(info)
        want = self.exec(plan, info, ref_dev, ids, where)
        got = self.exec(plan, info, dev, ids, where)
        if want is None or got is None:
            return None
        for name in want:
            self.compare_fp32(where, name, got[name], want[name])
        decoder = "logits" in want and "generation" in self.ref
        if decoder:
            prompt = list(self.ref["generation"]["prompt_ids"])
            greedy = self.run_greedy if info["interface"] == "ragged" else \
                lambda p, d, pr, n, w: self.exec_greedy(p, info, d, pr, n, w)
            want_l, want_t = greedy(plan, ref_dev, prompt, self.args.tokens, where)
            got_l, got_t = greedy(plan, dev, prompt, self.args.tokens, where)
            if want_t is not None and got_t is not None:
                self.compare_tokens(where, got_t, want_t, want_l)
                # Past a differing token the inputs differ: compare up to it.
                steps = next((i + 1 for i, (a, b) in enumerate(zip(got_t, want_t)) if a != b),
                             min(len(got_l), len(want_l)))
                max_rel, _ = rel_per_position(got_l[:steps], want_l[:steps])
                self.check(float(max_rel.max()) <= FP32_REL,
                           f"{where}: greedy logits of {steps} steps within {FP32_REL:g} of the "
                           f"cpu's (max_rel {max_rel.max():.2e} at step {int(max_rel.argmax())})")
        return (plan, info, ids, want["logits"]) if decoder else None

    def half(self, dtype, flags, info32, ids, full):
        variant = f"{'ragged' if info32['interface'] == 'ragged' else 'dense'}-{dtype}"
        where = f"{self.dir.name} {variant}"
        plan, info = self.build(variant, [*flags, "--dtype", dtype])
        if plan is None:
            return
        self.check(info["interface"] == info32["interface"],
                   f"{where}: the {dtype} plan has the fp32 plan's {info32['interface']} "
                   f"interface (got {info['interface']})")
        got = self.exec(plan, info, self.args.device, ids, where)
        base = self.exec(plan, info, self.args.reference, ids, where)
        if got is None:
            return
        half = got["logits"]
        max_rel, l2_rel = rel_per_position(half, full)
        top1 = float(np.mean(np.argmax(half, -1) == np.argmax(full, -1)))
        bound, why = REL_TOL[dtype], f"the cpu {dtype} plans' bound"
        line = (f"device {self.dir.name} {variant} max_rel {max_rel.max():.3e} "
                f"l2_rel {l2_rel.max():.3e} top1 {top1:.4f}")
        if base is not None:
            bmax, bl2 = rel_per_position(base["logits"], full)
            line += f" (cpu {dtype} plan: max_rel {bmax.max():.3e} l2_rel {bl2.max():.3e})"
            bound = min(REL_TOL[dtype], max(HALF_REL, HALF_SLACK * float(bmax.max())))
            why = (f"2e-2, or {HALF_SLACK:g}x the cpu {dtype} plan's {bmax.max():.2e}, at most "
                   f"{REL_TOL[dtype]:g}")
        self.check(float(max_rel.max()) <= bound,
                   f"{where}: max over {len(ids)} positions of max|dev {dtype} - cpu fp32| / "
                   f"max|cpu fp32| = {max_rel.max():.2e} <= {bound:.2e} ({why})")
        self.check(top1 >= TOP1_MIN, f"{where}: top-1 agrees with the cpu fp32 plan on "
                   f"{top1:.1%} of {len(ids)} teacher-forced positions")
        self.check.note(line)
        if info["interface"] != "ragged":
            return
        n = len(ids) // 2
        logits, toks = self.run_greedy(plan, self.args.device, ids[:n], self.args.tokens, where)
        if toks is None:
            return
        self.check(len(toks) == self.args.tokens,
                   f"{where}: kiln run generated {len(toks)} of {self.args.tokens} tokens")
        mr, l2 = rel_per_position(logits[:1], full[n - 1:n])
        self.check(float(mr[0]) <= REL_TOL[dtype],
                   f"{where}: kiln run's logits after {n} prompt tokens: max_rel {mr[0]:.2e} "
                   f"(l2_rel {l2[0]:.2e}) to the cpu fp32 plan's, within {REL_TOL[dtype]:g}")

    def test(self, no_inject):
        flags = list(self.args.build_flag)
        result = self.fp32("default", flags)
        if result is not None:
            _, info, ids, full = result
            for dtype in self.args.dtypes:
                self.half(dtype, flags, info, ids, full)
        if no_inject:
            self.fp32("no-inject", [f for f in flags if f != "--require-injection"] +
                      ["--no-inject"])


def skip_or_fail(args, why):
    if args.device_required:
        print(f"FAIL the device '{args.device}' was asked for but cannot run: {why}")
        return 1
    print(f"SKIP fixtures on '{args.device}': {why}")
    return SKIP


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln that runs plans")
    ap.add_argument("--builder", help="the kiln that builds plans (default: --kiln)")
    ap.add_argument("--device", help="the device under test (default: KILN_TEST_DEVICE or cuda)")
    ap.add_argument("--reference", default="cpu", help="the device compared with (default cpu)")
    ap.add_argument("--dtypes", default="bf16,fp16",
                    help="half plans to check, comma-separated ('' for none)")
    ap.add_argument("--tokens", type=int, default=32, help="greedy tokens to generate")
    ap.add_argument("--build-flag", action="append", default=[],
                    help="extra `kiln build` flag, e.g. --require-injection (repeatable)")
    ap.add_argument("--also-no-inject", default="llama-optimum,gpt2-optimum",
                    help="fixtures also built with --no-inject (fp32 checks), comma-separated")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1),
                    help="fixtures checked at once")
    ap.add_argument("--summary", help="write the counts of checks as JSON here")
    ap.add_argument("fixtures", nargs="*", help="fixture folders (default: every folder of "
                    "test/fixtures with a model.onnx and reference.json)")
    args = ap.parse_args()
    env_device = os.environ.get("KILN_TEST_DEVICE", "")
    args.device_required = bool(args.device or env_device)
    args.device = args.device or env_device or "cuda"
    args.builder = args.builder or args.kiln
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    for d in args.dtypes:
        if d not in REL_TOL:
            ap.error(f"--dtypes: unknown dtype {d} (known: {', '.join(REL_TOL)})")
    no_inject = set(filter(None, args.also_no_inject.split(",")))
    folders = [Path(f) for f in args.fixtures] or sorted(
        d for d in (Path(__file__).resolve().parent.parent / "fixtures").iterdir()
        if (d / "model.onnx").exists() and (d / "reference.json").exists())

    def finish(code, passed=0, failed=0, skipped=0):
        if args.summary:
            Path(args.summary).write_text(json.dumps(
                {"passed": passed, "failed": failed, "skipped": skipped}) + "\n")
        return code

    if args.device.split(":")[0] == "cuda":
        count, why = cuda_device_count()
        if count == 0:
            code = skip_or_fail(args, why)
            return finish(code, failed=int(code == 1), skipped=int(code == SKIP))
    kiln = Kiln(args.kiln, args.builder)
    logs = []
    with tempfile.TemporaryDirectory(prefix="kiln-device-") as tmp:
        # Whether this kiln has the device's backend at all, on a plan of the
        # first fixture.
        probe = FixtureLog()
        plan, _ = Fixture(args, kiln, folders[0], Path(tmp), probe).build("probe",
                                                                          args.build_flag)
        print("\n".join(probe.lines))
        if plan is None:
            return finish(1, failed=1)
        built = kiln.built_backends(plan)
        base = args.device.split(":")[0]
        if built is not None and base not in built:
            code = skip_or_fail(args, f"this kiln was built without the '{base}' backend "
                                f"(built: {', '.join(built)})")
            return finish(code, failed=int(code == 1), skipped=int(code == SKIP))

        gaps = DEVICE_GAPS.get(base, {})
        skipped = [f for f in folders if f.name in gaps]
        for f in skipped:
            print(f"skip {f.name} on {args.device}: {gaps[f.name]}")
        folders = [f for f in folders if f.name not in gaps]

        def one(folder):
            log = FixtureLog()
            try:
                Fixture(args, kiln, folder, Path(tmp), log).test(folder.name in no_inject)
            except Exception as e:  # a broken fixture fails, the others still run
                log(False, f"{folder.name}: {type(e).__name__}: {e}")
            print("\n".join(log.lines), flush=True)
            return log

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            logs = list(pool.map(one, folders))
    failures = [f for log in logs for f in log.failures]
    passed = sum(log.passed for log in logs)
    for f in failures:
        print("FAIL", f)
    print(f"\nfixtures on {args.device}: {passed} checks passed, {len(failures)} failed, "
          f"{len(skipped)} fixtures skipped")
    return finish(1 if failures else 0, passed=passed, failed=len(failures),
                  skipped=len(skipped))


if __name__ == "__main__":
    sys.exit(main())
