#!/usr/bin/env python3
"""End-to-end check of every fixture against its ONNX Runtime reference.

For each fixture folder (test/fixtures/<name> with reference.json and
reference.npz), in fp32:
  1. kiln build model.onnx -> plan;
  2. for prompt lengths 1, 7 and 64: kiln exec on the whole prompt (past
     length 0) gives logits for every position, compared with the reference;
  3. kiln run --temperature 0 for 17 tokens dumps the last-position logits of
     the prefill and of 16 decode steps (the runtime carries the KV cache, or
     re-runs the sequence for models without one), compared with the
     reference's decode logits, and its greedy tokens must equal ORT's;
  4. greedy generation of 32 tokens from the fixture's prompt equals ORT's.
Encoder fixtures (BERT, reference.json "task": "feature-extraction") have no
KV cache and no generation: step 2 compares the outputs each case names (e.g.
last_hidden_state) for every case (a few lengths, and a tokenized text), with
attention_mask all ones and token_type_ids all zeros; steps 3 and 4 are skipped.
Outputs pass when max|kiln - ref| / max|ref| <= 1e-4.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

REL_TOL = 1e-4


def rel_err(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(np.max(np.abs(want)), 1e-30))


class Fixture:
    def __init__(self, kiln, builder, folder, tmp):
        self.kiln, self.builder, self.dir, self.tmp = kiln, builder, folder, tmp
        self.build_flags = []
        self.ref = json.loads((folder / "reference.json").read_text())
        npz = folder / "reference.npz"
        self.arrays = np.load(npz) if npz.exists() else {}
        self.plan = tmp / (folder.name + ".plan")
        # kiln exec binds the model's own inputs (past_key_values ...), which
        # only a dense plan has; generation runs the default (ragged) plan.
        self.exec_plan = tmp / (folder.name + "-dense.plan")
        self.expect_ragged = False
        self.failures = []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + f"{self.dir.name}: {what}")
        if not ok:
            self.failures.append(what)

    def kiln_run(self, args, tool=None):
        return subprocess.run([tool or self.kiln, *args], capture_output=True, text=True)

    def build(self):
        r = self.kiln_run(["build", str(self.dir / "model.onnx"), "-o", str(self.plan), "--quiet",
                           *self.build_flags], self.builder)
        self.check(r.returncode == 0, f"kiln build (exit {r.returncode}) {r.stderr.strip()[-400:]}")
        if r.returncode != 0:
            return False
        if self.expect_ragged:
            self.check("dense interface" not in r.stderr,
                       f"the plan has the ragged interface {r.stderr.strip()[-300:]}")
        r = self.kiln_run(["build", str(self.dir / "model.onnx"), "-o", str(self.exec_plan),
                           "--quiet", "--no-ragged", *self.build_flags], self.builder)
        self.check(r.returncode == 0, f"kiln build --no-ragged (exit {r.returncode}) "
                   f"{r.stderr.strip()[-400:]}")
        return r.returncode == 0

    def graph_inputs(self, ids):
        """The inputs ORT got for a prefill of `ids` with past length 0."""
        feeds = {}
        for spec in self.ref["onnx"]["inputs"]:
            name = spec["name"]
            if name == "input_ids":
                feeds[name] = np.array([ids], dtype=np.int64)
            elif name == "attention_mask":
                feeds[name] = np.ones((1, len(ids)), dtype=np.int64)
            elif name == "position_ids":
                feeds[name] = np.arange(len(ids), dtype=np.int64)[None]
            elif name == "token_type_ids":
                feeds[name] = np.zeros((1, len(ids)), dtype=np.int64)
            elif name.startswith("past_key_values"):
                shape = [1 if s == "batch_size" else 0 if isinstance(s, str) else s
                         for s in spec["shape"]]
                feeds[name] = np.zeros(shape, dtype=np.float32)
            else:
                raise ValueError(f"unknown input {name}")
        return feeds

    def exec_prefill(self, case):
        """kiln exec on a whole sequence; compares every output the case names
        (decoders: logits, from lenL_prompt_ids / lenL_prefill_logits)."""
        length = case["prompt_length"]
        ids = self.arrays[case.get("input_ids_key", f"len{length}_prompt_ids")].tolist()
        outputs = case.get("outputs", {"logits": f"len{length}_prefill_logits"})
        tag = case.get("input_ids_key", f"len{length}")
        work = self.tmp / f"{self.dir.name}-exec-{tag}"
        (work / "out").mkdir(parents=True)
        args = ["exec", str(self.exec_plan), "--output-dir", str(work / "out")]
        for name, value in self.graph_inputs(ids).items():
            path = work / f"{name}.pb"
            path.write_bytes(numpy_helper.from_array(value, name).SerializeToString())
            args += ["--input", f"{name}={path}"]
        r = self.kiln_run(args)
        if r.returncode != 0:
            self.check(False, f"kiln exec, {tag}: exit {r.returncode}: {r.stderr[-400:]}")
            return
        for out_name, key in outputs.items():
            want = self.arrays[key]
            path = work / "out" / f"{out_name}.pb"
            if not path.exists():
                self.check(False, f"kiln exec, {tag}: no output {out_name}")
                continue
            got = numpy_helper.to_array(onnx.load_tensor(str(path)))[0]
            err = rel_err(got, want) if got.shape == want.shape else float("inf")
            what = "prefill logits" if out_name == "logits" else out_name
            self.check(err <= REL_TOL,
                       f"{what}, prompt {length}: shape {got.shape}, rel err {err:.2e}")

    def run_greedy(self, ids, new_tokens, tag):
        dump = self.tmp / f"{self.dir.name}-{tag}.npy"
        out_ids = self.tmp / f"{self.dir.name}-{tag}.json"
        r = self.kiln_run(["run", str(self.plan), "--prompt-ids", ",".join(map(str, ids)),
                           "--max-new-tokens", str(new_tokens), "--temperature", "0",
                           "--ignore-eos", "--no-stream", "--dump-logits", str(dump),
                           "--output-ids", str(out_ids)])
        if r.returncode != 0:
            self.check(False, f"kiln run {tag}: exit {r.returncode}: {r.stderr[-400:]}")
            return None, None
        return np.load(dump), json.loads(out_ids.read_text())

    def decode(self, case):
        length = case["prompt_length"]
        if f"len{length}_decode_logits" not in self.arrays or "input_ids_key" in case:
            return  # encoder fixture: nothing to decode
        ids = self.arrays[f"len{length}_prompt_ids"].tolist()
        logits, toks = self.run_greedy(ids, 17, f"decode{length}")
        if logits is None:
            return
        want = np.concatenate([self.arrays[f"len{length}_prefill_logits"][-1:],
                               self.arrays[f"len{length}_decode_logits"]])
        err = rel_err(logits, want) if logits.shape == want.shape else float("inf")
        self.check(err <= REL_TOL, f"16 decode steps after prompt {length}: rel err {err:.2e}")
        want_ids = self.arrays[f"len{length}_decode_ids"].tolist()
        self.check(toks[:16] == want_ids, f"greedy tokens after prompt {length} equal ORT's")

    def generate(self):
        if "generation" not in self.ref:
            return  # encoder fixture
        gen = self.ref["generation"]
        prompt = gen["prompt_ids"]
        want = self.arrays["generate_output_ids"].tolist() if "generate_output_ids" in \
            self.arrays else gen["output_ids"]
        _, toks = self.run_greedy(prompt, len(want), "generate")
        if toks is not None:
            self.check(toks == want, f"greedy generation of {len(want)} tokens equals ORT's")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True, help="the kiln that runs plans")
    ap.add_argument("--builder", help="the kiln that builds plans (default: --kiln); lets a "
                    "runtime-only kiln be tested on plans built by a compiler build")
    ap.add_argument("--build-flag", action="append", default=[],
                    help="extra `kiln build` flag, e.g. --require-injection or --no-inject "
                    "(repeatable)")
    ap.add_argument("--expect-ragged", action="store_true",
                    help="fail when the default build keeps the dense interface")
    ap.add_argument("fixtures", nargs="+", help="fixture folders")
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-e2e-") as tmp:
        for folder in map(Path, args.fixtures):
            f = Fixture(args.kiln, args.builder or args.kiln, folder, Path(tmp))
            f.build_flags = args.build_flag
            f.expect_ragged = args.expect_ragged
            if f.build():
                for case in f.ref.get("cases", []):
                    f.exec_prefill(case)
                    f.decode(case)
                f.generate()
            failures += len(f.failures)
    print(f"\ne2e: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
