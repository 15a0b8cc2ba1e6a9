#!/usr/bin/env python3
"""Hostile input: truncated and bit-flipped ONNX models, plans, tensors and
configs fed to kiln build, inspect, verify, exec and run.

Every run must end with a clean exit: 2 (bad input, with a message on stderr)
or, for an ONNX bit flip that leaves a valid model (a flipped weight bit), 0.
A signal, a sanitizer report or any other exit code fails the test. CI runs
this against the AddressSanitizer build.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import reproducers

ENV = dict(os.environ,
           ASAN_OPTIONS="detect_leaks=0:exitcode=86:abort_on_error=0",
           UBSAN_OPTIONS="halt_on_error=1:exitcode=87:print_stacktrace=1")
TIMEOUT_S = 120


class Checker:
    def __init__(self, verbose):
        self.runs = 0
        self.failures = []
        self.verbose = verbose

    def run(self, what, cmd, allowed, expect=None):
        """Runs cmd; with `expect`, its output must also contain that text."""
        self.runs += 1
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                               env=ENV, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.failures.append(f"{what}: hung for {TIMEOUT_S}s")
            return
        code = r.returncode
        if code not in allowed:
            kind = f"signal {-code}" if code < 0 else f"exit {code}"
            self.failures.append(f"{what}: {kind} (allowed {sorted(allowed)}); stderr: "
                                 f"{r.stderr.strip()[-800:]}")
        elif code == 2 and not r.stderr.strip():
            self.failures.append(f"{what}: exit 2 with no message")
        elif expect and expect not in r.stderr + r.stdout:
            self.failures.append(f"{what}: exit {code} without the expected message "
                                 f"{expect!r}; stderr: {r.stderr.strip()[-800:]}")
        elif self.verbose:
            print(f"ok {what}: exit {code}: {r.stderr.strip().splitlines()[-1:] }")


def variants(data, rng, n_flips):
    n = len(data)
    cuts = sorted({0, 1, 7, 8, 63, 64, 65, 100, n // 3, n // 2, n - 4097, n - 4096, n - 100,
                   n - 8, n - 1} - {n})
    for c in cuts:
        if 0 <= c < n:
            yield f"truncated to {c} bytes", data[:c]
    # Flips in the first 4 KiB hit headers and the graph; the rest anywhere.
    for i in range(n_flips):
        pos = rng.randrange(min(n, 4096)) if i % 2 == 0 else rng.randrange(n)
        b = bytearray(data)
        b[pos] ^= 1 << rng.randrange(8)
        yield f"bit flip at byte {pos}", bytes(b)
    yield "random bytes", bytes(rng.randrange(256) for _ in range(4096))
    yield "empty file", b""


def run_reproducers(chk, kiln, builder, tmp):
    """Fuzzing findings (reproducers.py): each must end as it now should."""
    rdir = tmp / "repro"
    rdir.mkdir()
    if builder == kiln:
        for case in reproducers.onnx_cases(rdir):
            chk.run(f"reproducer: {case.what}", [kiln, *case.argv], {case.code}, case.expect)
        problem = reproducers.check_empty_weight_output(rdir)
        if problem:
            chk.runs += 1
            chk.failures.append(problem)
    small_onnx = rdir / "chain.onnx"
    reproducers.onnx.save(reproducers.small_chain_model(), small_onnx)
    small_plan = rdir / "chain.plan"
    r = subprocess.run([builder, "build", str(small_onnx), "-o", str(small_plan), "--quiet"],
                       capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        chk.runs += 1
        chk.failures.append(f"reproducers: cannot build the small plan: {r.stderr}")
        return
    for i, (what, data, msg) in enumerate(reproducers.plan_cases(small_plan.read_bytes())):
        bad = rdir / f"repro{i}.plan"
        bad.write_bytes(data)
        for cmd in (["inspect", str(bad)], ["run", str(bad), "-p", "x", "--max-new-tokens", "1"]):
            chk.run(f"reproducer: {cmd[0]}: plan with {what}", [kiln, *cmd], {2}, msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", help="the kiln that builds plans (default: --kiln)")
    ap.add_argument("--onnx", required=True, help="a small valid ONNX decoder")
    ap.add_argument("--inputs", required=True, help="folder of input_<name>.pb for kiln exec")
    ap.add_argument("--flips", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    chk = Checker(args.verbose)
    kiln = args.kiln

    with tempfile.TemporaryDirectory(prefix="kiln-hostile-") as tmp:
        tmp = Path(tmp)
        good_plan = tmp / "good.plan"
        builder = args.builder or kiln
        r = subprocess.run([builder, "build", args.onnx, "-o", str(good_plan), "--quiet"],
                           capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            print(f"cannot build the valid model: {r.stderr}", file=sys.stderr)
            return 1
        inputs = []
        for p in sorted(Path(args.inputs).glob("input_*.pb")):
            inputs += ["--input", f"{p.stem[len('input_'):]}={p}"]

        # ONNX models: a flipped bit may leave a valid model (exit 0) or not (2).
        for i, (what, data) in enumerate(variants(Path(args.onnx).read_bytes(), rng, args.flips)
                                         if builder == kiln else []):
            bad = tmp / f"bad{i}.onnx"
            bad.write_bytes(data)
            chk.run(f"build: onnx {what}", [kiln, "build", str(bad), "-o", str(tmp / "o.plan"),
                                            "--quiet"], {0, 2})
        # Plans are checksummed: every corruption must be refused.
        plan_bytes = good_plan.read_bytes()
        for i, (what, data) in enumerate(variants(plan_bytes, rng, args.flips)):
            bad = tmp / f"bad{i}.plan"
            bad.write_bytes(data)
            chk.run(f"inspect: plan {what}", [kiln, "inspect", str(bad)], {2})
            chk.run(f"verify: plan {what}", [kiln, "verify", str(bad)], {2})
            chk.run(f"exec: plan {what}", [kiln, "exec", str(bad), *inputs, "--output-dir",
                                           str(tmp / "out")], {2})
            chk.run(f"run: plan {what}", [kiln, "run", str(bad), "-p", "hello",
                                          "--max-new-tokens", "2"], {2})
        # Corrupt input tensors for exec.
        first = sorted(Path(args.inputs).glob("input_*.pb"))[0]
        tensor = first.read_bytes()
        name = first.stem[len("input_"):]
        for i, (what, data) in enumerate(variants(tensor, rng, 8)):
            bad = tmp / f"bad{i}.pb"
            bad.write_bytes(data)
            chk.run(f"exec: tensor {what}", [kiln, "exec", str(good_plan), "--input",
                                             f"{name}={bad}", "--output-dir", str(tmp / "out")],
                    {0, 2})
        # Bad configs and arguments.
        can_build = builder == kiln
        for j, text in enumerate([] if not can_build else ['{', '[]', '{"dtype": 3}', '{"unknown_key": 1}',
                                  '{"tp": {"tp_size": "x"}}', '\xff\xfe']):
            cfg = tmp / f"cfg{j}.json"
            cfg.write_bytes(text.encode("latin-1"))
            chk.run(f"build: config {text!r}", [kiln, "build", args.onnx, "-o",
                                                str(tmp / "c.plan"), "--config", str(cfg)], {2})
        for argv in (["run", str(good_plan), "-p", "x", "--temperature", "-1"],
                     ["run", str(good_plan), "-p", "x", "--top-p", "0"],
                     ["run", str(good_plan), "-p", "x", "--max-new-tokens", "abc"],
                     ["run", str(tmp / "missing.plan"), "-p", "x"],
                     ["inspect"], ["verify"], ["verify", str(good_plan), "--onnx"],
                     ["exec", str(good_plan), "--input", "nonexistent=x.pb"],
                     ["no-such-command"]) + ((["build", str(tmp / "missing.onnx"), "-o",
                                              str(tmp / "m.plan")],) if can_build else ()):
            chk.run("argv " + " ".join(argv[:1] + argv[2:]), [kiln, *argv], {2})
        run_reproducers(chk, kiln, builder, tmp)

    for f in chk.failures:
        print("FAIL", f)
    print(f"hostile input: {chk.runs - len(chk.failures)} clean / {chk.runs} runs")
    return 1 if chk.failures else 0


if __name__ == "__main__":
    sys.exit(main())
