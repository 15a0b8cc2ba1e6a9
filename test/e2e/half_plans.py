#!/usr/bin/env python3
"""Half-precision plans (build config dtype fp16 and bf16) against the fp32 plan.

For each decoder fixture, over one fixed token sequence (the fixture's
64-token prompt, or its generation prompt and ORT's greedy continuation):
  1. kiln build the fp32, fp16 and bf16 plans, with the ragged interface
     where the fixture gets it and with --no-ragged (dense) always;
  2. kiln inspect: the half plan's float weights and its KV cache are in the
     half type, and it has the fp32 plan's ops (injection fired the same) but
     for Casts;
  3. teacher-forced logits for every position from kiln exec: the fp32
     dense plan gets the model's own inputs over the whole sequence (past
     length 0); a half dense plan with a KV cache gets its first half so,
     then the rest with the first half's present.* as its past (the
     decode path: every causal mask is built with past > 0); a ragged plan
     gets one sequence in fresh paged caches (block size 16), kv_slots
     0..T-1 and logits for every token;
  4. every half logit is finite, and per position p,
     rel_p = max_v |half[p, v] - fp32[p, v]| / max_v |fp32[p, v]|
     (the max-norm of the difference over the max-norm of the fp32 logits);
     every rel_p must be <= 2e-2 for fp16 (4e-2 for bf16, see REL_TOL), and
     argmax(half[p]) == argmax(fp32[p]) on at least 95% of positions.
The fp32 ragged and dense logits must also agree to 1e-4 (the exec harness
drives the ragged interface right). `kiln run` on each plan (the engine,
with the KV cache it allocates) decodes DECODE_STEPS greedy tokens after
half the sequence: every step's logits are finite, the first step's are
within the same bound of the fp32 teacher-forced ones, and each later
step's of the fp32 plan's own run while both generated the same tokens.
Prints one line per check and a summary line per plan:
`half <fixture> <interface> <dtype> max_rel <x> top1 <y>`.

--older-mask-model adds a decoder that the script writes itself
(older_mask_model.py: the causal mask from Trilu, ScatterND and
finfo(float32).min, as OPT, Falcon and StableLM exports build it), in three
variants: plain; with Granite's scaled and Gemma 2's soft-capped logits;
with Gemma 2's sliding-window layer and attention soft-cap; and with no
position_ids, the positions numbered from the mask's running sum (OPT).
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from checks import Checks
from older_mask_model import HEAD_DIM, HEADS, VOCAB
from older_mask_model import make_model as make_older_mask_model

# fp16 keeps 11 significant bits, bfloat16 8: its rounding error is 8x
# fp16's. On these fixtures bf16 plans measure up to 2.8e-2 (fp16 at most
# 2.8e-3), mostly the weights' own rounding (docs/build-config.md has the
# tables and where the error comes from), and on the device up to 1.33x the
# cpu's, so bf16 is held to 4e-2.
REL_TOL = {"fp16": 2e-2, "bf16": 4e-2}
# older_mask_model's Gemma-2-like variant and the config.json that names its
# window and layer types (window_batch.py batches it).
SLIDING_MODEL = {"window": 8, "sliding_layers": (0,), "attn_softcap": 1.5}
SLIDING_CONFIG = {"model_type": "gemma2", "sliding_window": 8, "max_position_embeddings": 64,
                  "vocab_size": VOCAB, "num_hidden_layers": 2,
                  "layer_types": ["sliding_attention", "full_attention"]}
TOP1_MIN = 0.95
BLOCK = 16
DECODE_STEPS = 4
HALF_TYPES = {"fp16": "f16", "bf16": "bf16"}


def rel_per_position(got, want):
    diff = np.max(np.abs(got.astype(np.float64) - want), axis=-1)
    return diff / np.maximum(np.max(np.abs(want.astype(np.float64)), axis=-1), 1e-30)


def zeros_proto(name, dtype, shape):
    """A zero tensor of the plan's dtype as a TensorProto (bf16 as raw bytes:
    numpy has no bfloat16)."""
    if dtype == "bf16":
        n = int(np.prod(shape)) if shape else 1
        return helper.make_tensor(name, TensorProto.BFLOAT16, shape, bytes(2 * n), raw=True)
    np_type = {"f32": np.float32, "f16": np.float16, "i64": np.int64}[dtype]
    return numpy_helper.from_array(np.zeros(shape, dtype=np_type), name)


def int_proto(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


class Fixture:
    def __init__(self, args, folder, tmp, check, ids=None):
        """`ids`: the token sequence, for a folder with no reference.json."""
        self.kiln, self.builder, self.dir, self.tmp = args.kiln, args.builder, folder, tmp
        self.args = args
        self.check = check
        self.runs32 = {}  # interface -> the fp32 plan's kiln run (tokens, logits)
        if ids is not None:
            self.ids = list(ids)
            return
        ref = json.loads((folder / "reference.json").read_text())
        npz = folder / "reference.npz"
        arrays = np.load(npz) if npz.exists() else {}
        if "len64_prompt_ids" in arrays:
            self.ids = arrays["len64_prompt_ids"].tolist()
        else:
            gen = ref["generation"]
            self.ids = list(gen["prompt_ids"]) + list(gen["output_ids"])

    def run(self, tool, args):
        return subprocess.run([tool, *args], capture_output=True, text=True)

    def build(self, dtype, dense):
        plan = self.tmp / f"{self.dir.name}-{dtype}-{'dense' if dense else 'default'}.plan"
        args = ["build", str(self.dir / "model.onnx"), "-o", str(plan), "--quiet",
                "--dtype", dtype] + (["--no-ragged"] if dense else [])
        r = self.run(self.builder, args)
        ok = self.check(r.returncode == 0, f"{self.dir.name}: kiln build --dtype {dtype}"
                        f"{' --no-ragged' if dense else ''} (exit {r.returncode}) "
                        f"{r.stderr.strip()[-300:]}")
        if not ok:
            return None, None
        r = self.run(self.kiln, ["inspect", str(plan), "--json"])
        if not self.check(r.returncode == 0, f"{self.dir.name}: kiln inspect {plan.name}"):
            return None, None
        return plan, json.loads(r.stdout)

    def check_types(self, info, dtype, where):
        want = HALF_TYPES[dtype]
        floats = {t: d["bytes"] for t, d in info["weight_dtypes"].items()
                  if t in ("f32", "f16", "bf16")}
        share = floats.get(want, 0) / max(sum(floats.values()), 1)
        self.check(share >= 0.99, f"{where}: {share:.1%} of the float weight bytes are {want} "
                   f"({info['weight_dtypes']})")
        self.check(info["kv_cache_dtype"] in (want, None),
                   f"{where}: KV cache is {info['kv_cache_dtype']}, want {want}")

    def exec_inputs(self, info, ragged, ids=None, past=None):
        """kiln exec's inputs for `ids` (default: the whole sequence); `past`:
        a dense plan's present.* outputs of the tokens before `ids`."""
        ids = self.ids if ids is None else ids
        start = 0 if past is None else past["past_length"]
        t = len(ids)
        protos = []
        for spec in info["inputs"]:
            name, dtype, shape = spec["name"], spec["dtype"], spec["shape"]
            if name in ("input_ids",):
                protos.append(int_proto(name, [ids]))
            elif name == "position_ids":
                protos.append(int_proto(name, [list(range(start, start + t))]))
            elif name == "attention_mask":
                protos.append(int_proto(name, [[1] * (start + t)]))
            elif name in ("kv_slots", "logits_indices"):
                protos.append(int_proto(name, list(range(t))))
            elif name == "query_start":
                protos.append(int_proto(name, [0, t]))
            elif name == "context_lens":
                protos.append(int_proto(name, [t]))
            elif name == "block_tables":
                protos.append(int_proto(name, [list(range((t + BLOCK - 1) // BLOCK))]))
            elif name.startswith("kv_cache."):
                blocks = (t + BLOCK - 1) // BLOCK
                protos.append(zeros_proto(name, dtype, [blocks, shape[1], BLOCK, shape[3]]))
            elif name.startswith("past_key_values.") and past is not None:
                present = past["dir"] / (name.replace("past_key_values.", "present.") + ".pb")
                protos.append(onnx.load_tensor(str(present)))
                protos[-1].name = name
            elif name.startswith("past_key_values."):
                dims = [1, shape[1], 0, shape[3]]
                protos.append(zeros_proto(name, dtype, dims))
            else:
                raise ValueError(f"{self.dir.name}: unknown input {name}")
        return protos

    def logits(self, plan, info, ragged, ids=None, past=None, tag="exec"):
        """Logits [len(ids), vocab] from one kiln exec (exec_inputs' ids and
        past); with past=None the outputs' folder is kept as self.last_out."""
        ids = self.ids if ids is None else ids
        work = self.tmp / (plan.stem + "-" + tag)
        (work / "out").mkdir(parents=True)
        args = ["exec", str(plan), "--output-dir", str(work / "out")]
        for proto in self.exec_inputs(info, ragged, ids, past):
            path = work / f"{proto.name}.pb"
            path.write_bytes(proto.SerializeToString())
            args += ["--input", f"{proto.name}={path}"]
        r = self.run(self.kiln, args)
        if not self.check(r.returncode == 0,
                          f"{plan.name}: kiln exec (exit {r.returncode}) {r.stderr[-300:]}"):
            return None
        self.last_out = work / "out"
        got = numpy_helper.to_array(onnx.load_tensor(str(work / "out" / "logits.pb")))
        self.check(got.dtype == np.float32, f"{plan.name}: logits are f32 (got {got.dtype})")
        return got.reshape(len(ids), -1)

    def decode_logits(self, plan, info):
        """Teacher-forced logits of a dense plan in two kiln execs: the first
        half of the sequence from an empty cache, then the rest with its
        present.* as the past, as the engine decodes. A plan with no KV
        cache inputs gets one exec over the whole sequence."""
        if not any(t["name"].startswith("past_key_values.") for t in info["inputs"]):
            return self.logits(plan, info, False)
        n = len(self.ids) // 2
        first = self.logits(plan, info, False, self.ids[:n], tag="prefill")
        if first is None:
            return None
        rest = self.logits(plan, info, False, self.ids[n:],
                           {"dir": self.last_out, "past_length": n}, tag="decode")
        return None if rest is None else np.concatenate([first, rest])

    def engine_run(self, plan, where):
        """kiln run (the engine, with its own KV cache): DECODE_STEPS greedy
        tokens after the first half of the sequence. (tokens, logits of
        every step as the sampler reads them), or None."""
        n = len(self.ids) // 2
        dump, out = self.tmp / (plan.stem + "-run.npy"), self.tmp / (plan.stem + "-run.json")
        r = self.run(self.kiln, ["run", str(plan), "--prompt-ids", ",".join(map(str, self.ids[:n])),
                                 "--max-new-tokens", str(DECODE_STEPS), "--temperature", "0",
                                 "--no-stream", "--ignore-eos", "--dump-logits", str(dump),
                                 "--output-ids", str(out)])
        if not self.check(r.returncode == 0,
                          f"{where}: kiln run (exit {r.returncode}) {r.stderr.strip()[-300:]}"):
            return None
        return json.loads(out.read_text()), np.load(dump)

    def engine_logits(self, plan, where, dtype, full, interface):
        """The half plan's kiln run: every step's logits are finite; the
        first (after the prompt) match the fp32 plan's teacher-forced ones,
        and each decode step's the fp32 plan's own run while the two have
        generated the same tokens."""
        run = self.engine_run(plan, where)
        if run is None:
            return
        tokens, got = run
        n = len(self.ids) // 2
        bad = [s for s in range(got.shape[0]) if not np.isfinite(got[s]).all()]
        self.check(got.shape[0] == DECODE_STEPS and not bad,
                   f"{where}: kiln run's {got.shape[0]} steps have finite logits "
                   f"(not at steps {bad})")
        rel = float(rel_per_position(got[:1], full[n - 1:n])[0]) if got.shape[0] >= 1 else 1.0
        self.check(rel <= REL_TOL[dtype], f"{where}: kiln run's logits after {n} prompt tokens, "
                   f"rel {rel:.2e} to the fp32 plan's")
        tokens32, logits32 = self.runs32.get(interface, (None, None))
        if tokens32 is None:
            return
        same = next((s for s in range(1, len(tokens)) if tokens[:s] != tokens32[:s]),
                    min(len(tokens), len(tokens32), got.shape[0], logits32.shape[0]))
        if same > 1:
            rel = rel_per_position(got[1:same], logits32[1:same])
            self.check(float(rel.max()) <= REL_TOL[dtype],
                       f"{where}: kiln run's decode steps 1..{same - 1} (tokens as the fp32 "
                       f"plan's), max rel {rel.max():.2e} to the fp32 plan's run")

    def compare(self, interface, dtype, half, full):
        rel = rel_per_position(half, full)
        top1 = float(np.mean(np.argmax(half, -1) == np.argmax(full, -1)))
        where = f"{self.dir.name} {interface} {dtype}"
        self.check(float(rel.max()) <= REL_TOL[dtype],
                   f"{where}: max over {len(rel)} positions of max|half - fp32| / max|fp32| "
                   f"= {rel.max():.2e} (worst position {int(rel.argmax())})")
        self.check(top1 >= TOP1_MIN, f"{where}: top-1 agrees on {top1:.1%} of positions")
        l2 = np.linalg.norm(half.astype(np.float64) - full, axis=-1) / np.maximum(
            np.linalg.norm(full.astype(np.float64), axis=-1), 1e-30)
        print(f"half {self.dir.name} {interface} {dtype} max_rel {rel.max():.3e} "
              f"l2_rel {l2.max():.3e} top1 {top1:.4f}")

    def test(self):
        fp32 = {}
        for dense in (False, True):
            plan, info = self.build("fp32", dense)
            if plan is None:
                continue
            interface = info["interface"]
            if not dense and interface != "ragged":
                continue  # this model keeps the dense interface: tested below
            fp32[interface] = self.logits(plan, info, interface == "ragged")
            run32 = self.engine_run(plan, f"{self.dir.name} {interface} fp32")
            if run32 is not None:
                self.runs32[interface] = run32
            for dtype in getattr(self.args, "dtypes", list(HALF_TYPES)):
                hplan, hinfo = self.build(dtype, dense)
                if hplan is None:
                    continue
                where = f"{self.dir.name} {interface} {dtype}"
                self.check(hinfo["interface"] == interface,
                           f"{where}: the half plan has the {interface} interface "
                           f"(got {hinfo['interface']})")
                self.check_types(hinfo, dtype, where)
                # Injection ran on the f32 graph: the half plan has the same
                # ops, plus Casts where f32 values meet half ones.
                ops32 = {k: v for k, v in info["op_counts"].items() if k != "cast"}
                ops16 = {k: v for k, v in hinfo["op_counts"].items() if k != "cast"}
                diff = {k: (ops16.get(k, 0), ops32.get(k, 0)) for k in ops16.keys() | ops32
                        if ops16.get(k, 0) != ops32.get(k, 0)}
                self.check(not diff, f"{where}: the same ops as the fp32 plan besides casts "
                           f"(differ, half vs fp32: {diff})")
                if interface == "ragged":
                    half = self.logits(hplan, hinfo, True)
                else:
                    half = self.decode_logits(hplan, hinfo)
                if half is not None:
                    bad = np.flatnonzero(~np.isfinite(half).all(axis=-1)).tolist()
                    self.check(not bad, f"{where}: finite logits at every position "
                               f"(not at {bad[:8]}{'...' if len(bad) > 8 else ''})")
                if half is not None and fp32[interface] is not None:
                    self.compare(interface, dtype, half, fp32[interface])
                    self.engine_logits(hplan, where, dtype, fp32[interface], interface)
        if fp32.get("ragged") is not None and fp32.get("dense") is not None:
            err = float(rel_per_position(fp32["ragged"], fp32["dense"]).max())
            self.check(err <= 1e-4, f"{self.dir.name}: fp32 ragged and dense logits agree "
                       f"(rel {err:.2e})")
        self.fp32 = fp32


def run_fixtures(doc, fixture_class, prefix):
    """The command line of this script and int8_plans.py: `fixture_class(args,
    folder, tmp, check).test()` on each fixture folder (and on the older-mask
    model with --older-mask-model); the exit code."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln that runs plans")
    ap.add_argument("--builder", help="the kiln that builds plans (default: --kiln)")
    ap.add_argument("--older-mask-model", action="store_true",
                    help="also test older_mask_model.py's decoder, written to a temporary folder")
    ap.add_argument("--dtypes", default="fp16,bf16",
                    help="the half types to test, comma-separated (default: fp16,bf16)")
    ap.add_argument("fixtures", nargs="*", help="decoder fixture folders")
    args = ap.parse_args()
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    for d in args.dtypes:
        if d not in HALF_TYPES:
            ap.error(f"--dtypes: unknown type {d} (known: {', '.join(HALF_TYPES)})")
    args.builder = args.builder or args.kiln
    if not args.fixtures and not args.older_mask_model:
        ap.error("give fixture folders, --older-mask-model or both")
    check = Checks()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        tmp = Path(tmp)
        for folder in map(Path, args.fixtures):
            fixture_class(args, folder, tmp, check).test()
        if args.older_mask_model:
            test_older_mask_model(args, fixture_class, tmp / "older-mask", check)
            # Granite's logits / logits_scaling after the head, then Gemma 2's
            # soft-cap: still ragged.
            test_older_mask_model(args, fixture_class, tmp / "older-mask-head-ops", check,
                                  logits_scale=0.5, logits_softcap=10.0)
            # Gemma 2's local and global layers and attention soft-cap: a
            # window of 8 on layer 0 (48 tokens outgrow it), ragged.
            test_older_mask_model(args, fixture_class, tmp / "older-mask-sliding", check,
                                  config=SLIDING_CONFIG, **SLIDING_MODEL)
            # No position_ids: OPT's positions from the mask's running sum.
            test_older_mask_model(args, fixture_class, tmp / "older-mask-cumsum", check,
                                  positions_from_mask=True)
    return check.exit_code()


def test_older_mask_model(args, fixture_class, folder, check, config=None, **model_args):
    """The fixture tests on older_mask_model.py's decoder (make_model's
    `model_args`; `config`: a config.json to write beside it), over 48
    random tokens; its fp32 dense logits must also match ONNX's reference
    evaluator's (numpy), so that the fp32 plan they are held to is right,
    and it must get the ragged interface."""
    folder.mkdir()
    model = make_older_mask_model(**model_args)
    onnx.save(model, str(folder / "model.onnx"))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    ids = np.random.default_rng(1).integers(4, VOCAB, 48).tolist()
    fixture = fixture_class(args, folder, folder.parent, check, ids)
    fixture.test()
    check(getattr(fixture, "fp32", {}).get("ragged") is not None,
          f"{folder.name}: the plan has the ragged interface")
    got = getattr(fixture, "fp32", {}).get("dense")
    if got is None:
        return
    feeds = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), np.int64),
             "position_ids": np.arange(len(ids))[None]}
    for t in model.graph.input:
        if t.name.startswith("past_key_values."):
            feeds[t.name] = np.zeros((1, HEADS, 0, HEAD_DIM), np.float32)
    feeds = {k: v for k, v in feeds.items() if k in {t.name for t in model.graph.input}}
    from onnx.reference import ReferenceEvaluator  # here: fixtures_on_device imports this file
    want = ReferenceEvaluator(model).run(["logits"], feeds)[0][0]
    err = float(rel_per_position(got, want).max())
    check(err <= 1e-4, f"{folder.name}: fp32 dense logits match onnx.reference's (rel {err:.2e})")


if __name__ == "__main__":
    sys.exit(run_fixtures(__doc__, Fixture, "kiln-half-"))
