#!/usr/bin/env python3
"""`kiln embed` against ONNX Runtime plus the same pooling in numpy.

    embed.py --kiln build/tools/kiln/kiln --builder build/tools/kiln/kiln FIXTURE_DIR

FIXTURE_DIR is test/fixtures/bert-st: a BERT encoder with a WordPiece
tokenizer and a sentence-transformers mean-pooling config, and, per text, the
HF tokenizer's ids and ONNX Runtime's token states for the text run alone.
Checks:
  - kiln build stores the pooling config (kiln inspect shows it) and warns
    about nothing;
  - every text of different lengths, embedded in one padded batch, equals
    numpy's mean over ORT's token states; --normalize gives unit vectors in
    the same directions; --batch-size 2 and each text alone give the same;
  - --npy writes the same float32 matrix; --texts-file reads one text a line;
  - CLS pooling with a Normalize module (modules.json) and the default mean
    pooling without modules.json;
  - a pooling mode kiln cannot apply: the build warns, kiln embed exits 2;
  - a tokenizer the runtime cannot run: the build warns, naming the feature;
  - kiln run on the encoder exits 2 and points to kiln embed; kiln embed on a
    decoder plan (gpt2-optimum beside the fixture) exits 2;
  - bad arguments exit 2 with a message.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

failures = []
ATOL = 2e-4  # kiln vs ORT on fp32 states of magnitude ~1


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def build(builder, model_dir, plan):
    """The build's warning lines."""
    r = run([builder, "build", Path(model_dir) / "model.onnx", "-o", plan])
    if r.returncode != 0:
        raise SystemExit(f"kiln build failed ({r.returncode}): {r.stderr}")
    return "\n".join(l for l in r.stderr.splitlines() if l.startswith("warning"))


def embed(kiln, plan, texts, *flags):
    args = [kiln, "embed", plan]
    for t in texts:
        args += ["--text", t]
    r = run(args + list(flags))
    if r.returncode != 0:
        check(False, f"kiln embed {' '.join(flags)}: exit {r.returncode} {r.stderr[-300:]}")
    return json.loads(r.stdout) if r.returncode == 0 else None


def l2(v):
    return v / np.maximum(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def gap(a, b):
    return float(np.abs(np.asarray(a, dtype=np.float64) - b).max())


def copy_fixture(src, dst, pooling=None, modules=True, tokenizer_patch=None):
    shutil.copytree(src, dst)
    if not modules:
        (dst / "modules.json").unlink()
    if pooling is not None:
        cfg_path = dst / "1_Pooling" / "config.json"
        cfg = json.loads(cfg_path.read_text())
        for k in cfg:
            if k.startswith("pooling_mode_"):
                cfg[k] = k == pooling
        cfg_path.write_text(json.dumps(cfg))
    if tokenizer_patch is not None:
        tok = json.loads((dst / "tokenizer.json").read_text())
        tok.update(tokenizer_patch)
        (dst / "tokenizer.json").write_text(json.dumps(tok))
    return dst


def check_mean(kiln, plan, texts, states, ids, log):
    check(log == "", f"build without warnings: {log}")
    r = run([kiln, "inspect", plan, "--json"])
    pooling = json.loads(r.stdout).get("pooling") if r.returncode == 0 else None
    check(pooling == {"mode": "mean", "normalize": False},
          f"the plan stores the pooling config (kiln inspect): {pooling}")
    want = np.stack([s.mean(axis=0) for s in states])
    out = embed(kiln, plan, texts, "--batch-size", "64")
    if out is None:
        return
    check(out["pooling"] == "mean" and not out["normalized"] and out["dimension"] == 64,
          f"header: {out['pooling']}, normalized {out['normalized']}, dim {out['dimension']}")
    check(out["token_counts"] == [len(i) for i in ids],
          f"token counts equal the HF tokenizer's: {out['token_counts']}")
    got = np.array(out["embeddings"])
    check(gap(got, want) < ATOL, f"one batch of {len(texts)} texts, mean: max |kiln - ORT| "
                                 f"{gap(got, want):.2e}")
    norm = embed(kiln, plan, texts, "--normalize")
    if norm:
        n = np.array(norm["embeddings"])
        check(norm["normalized"] and gap(n, l2(want)) < ATOL and
              gap(np.linalg.norm(n, axis=1), 1.0) < 1e-5,
              f"--normalize: unit vectors, max |kiln - ORT| {gap(n, l2(want)):.2e}")
    small = embed(kiln, plan, texts, "--batch-size", "2")
    if small:
        check(gap(small["embeddings"], got) < 1e-5,
              f"--batch-size 2 equals one batch: {gap(small['embeddings'], got):.2e}")
    alone = [embed(kiln, plan, [t]) for t in texts]
    if all(alone):
        a = np.array([x["embeddings"][0] for x in alone])
        check(gap(a, got) < 1e-5, f"each text alone equals the padded batch: {gap(a, got):.2e}")
    return got


def check_files(kiln, plan, texts, got, tmp):
    npy = tmp / "out.npy"
    r = run([kiln, "embed", plan, "--npy", npy] + sum((["--text", t] for t in texts), []))
    check(r.returncode == 0 and r.stdout == "", f"--npy: exit {r.returncode}, stdout empty")
    if r.returncode == 0:
        arr = np.load(npy)
        check(arr.dtype == np.float32 and arr.shape == got.shape and gap(arr, got) < 1e-6,
              f"--npy holds float32 {arr.shape} equal to the JSON")
    listing = tmp / "texts.txt"
    listing.write_text("\n".join(texts) + "\n\n")
    r = run([kiln, "embed", plan, "--texts-file", listing])
    ok = r.returncode == 0 and gap(json.loads(r.stdout)["embeddings"], got) < 1e-6
    check(ok, f"--texts-file (one text a line, blank lines skipped): exit {r.returncode}")


def check_cls_normalize(kiln, builder, fixture, texts, states, tmp):
    d = copy_fixture(fixture, tmp / "cls", pooling="pooling_mode_cls_token")
    modules = json.loads((d / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                    "type": "sentence_transformers.models.Normalize"})
    (d / "modules.json").write_text(json.dumps(modules))
    build(builder, d, tmp / "cls.plan")
    r = run([kiln, "inspect", tmp / "cls.plan", "--json"])
    pooling = json.loads(r.stdout).get("pooling") if r.returncode == 0 else None
    check(pooling == {"mode": "cls", "normalize": True}, f"CLS plan's pooling: {pooling}")
    out = embed(kiln, tmp / "cls.plan", texts)
    if out:
        want = l2(np.stack([s[0] for s in states]))
        check(out["pooling"] == "cls" and out["normalized"] and
              gap(out["embeddings"], want) < ATOL,
              f"CLS + Normalize module: max |kiln - ORT| {gap(out['embeddings'], want):.2e}")
    raw = embed(kiln, tmp / "cls.plan", texts[:2], "--batch-size", "1")
    if raw:
        check(gap(raw["embeddings"], l2(np.stack([s[0] for s in states[:2]]))) < ATOL,
              "CLS one text per batch")


def check_defaults_and_refusals(kiln, builder, fixture, texts, states, tmp):
    d = copy_fixture(fixture, tmp / "nomodules", modules=False)
    build(builder, d, tmp / "nomodules.plan")
    r = run([kiln, "embed", tmp / "nomodules.plan", "--text", texts[1]])
    ok = r.returncode == 0 and gap(json.loads(r.stdout)["embeddings"][0],
                                   states[1].mean(axis=0)) < ATOL
    check(ok and "no pooling config" in r.stderr,
          f"no modules.json: mean by default, said on stderr: {r.stderr.strip()}")

    d = copy_fixture(fixture, tmp / "max", pooling="pooling_mode_max_tokens")
    log = build(builder, d, tmp / "max.plan")
    check("warning" in log and "'max'" in log, f"max pooling: build warns: {log}")
    r = run([kiln, "embed", tmp / "max.plan", "--text", "x"])
    check(r.returncode == 2 and "'max'" in r.stderr, f"max pooling: embed exit 2: {r.stderr.strip()}")

    word_level = {"model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}}
    d = copy_fixture(fixture, tmp / "wordlevel", tokenizer_patch=word_level)
    log = build(builder, d, tmp / "wordlevel.plan")
    check("warning" in log and "WordLevel" in log and "tokenizer.json" in log,
          f"WordLevel tokenizer: build warns naming it: {log}")
    # A Unigram model (T5, XLM-R encoders) runs since issue 31: no warning.
    unigram = {"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]}}
    d = copy_fixture(fixture, tmp / "unigram", tokenizer_patch=unigram)
    log = build(builder, d, tmp / "unigram.plan")
    check("warning" not in log, f"Unigram tokenizer: builds without a warning: {log}")
    d = copy_fixture(fixture, tmp / "nfkc", tokenizer_patch={"normalizer": {"type": "NFKC"}})
    log = build(builder, d, tmp / "nfkc.plan")
    check("warning" in log and "NFKC" in log, f"NFKC normalizer: build warns naming it: {log}")


def check_decoder_refused(kiln, builder, decoder_dir, tmp):
    """A decoder plan is not an encoder: kiln embed names the input it cannot fill."""
    build(builder, decoder_dir, tmp / "decoder.plan")
    r = run([kiln, "embed", tmp / "decoder.plan", "--text", "hello"])
    check(r.returncode == 2 and "encoder" in r.stderr,
          f"kiln embed on a decoder plan: exit {r.returncode}: {r.stderr.strip()}")


def check_errors(kiln, plan):
    r = run([kiln, "run", plan, "--prompt-ids", "1,2,3"])
    check(r.returncode == 2 and "encoder" in r.stderr and "kiln embed" in r.stderr,
          f"kiln run on the encoder: exit {r.returncode}: {r.stderr.strip()}")
    r = run([kiln, "run", plan, "-p", "hello"])
    check(r.returncode == 2 and "kiln embed" in r.stderr, "kiln run -p on the encoder: exit 2")
    cases = [([], "--text"), (["--text", "a", "--batch-size", "0"], "--batch-size"),
             (["--text", "word " * 200], "positions"), (["--texts-file", "/nonexistent"], "open")]
    for args, needle in cases:
        r = run([kiln, "embed", plan] + args)
        check(r.returncode == 2 and needle in r.stderr,
              f"kiln embed {' '.join(args)[:40]}: exit {r.returncode}, '{needle}' in message")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True)
    ap.add_argument("fixture")
    args = ap.parse_args()
    fixture = Path(args.fixture)
    ref = json.loads((fixture / "reference.json").read_text())
    npz = np.load(fixture / "reference.npz")
    texts = ref["texts"]
    states = [npz[f"text{i}_last_hidden_state"].astype(np.float64) for i in range(len(texts))]
    ids = [npz[f"text{i}_ids"] for i in range(len(texts))]
    check(len({len(i) for i in ids}) >= 5, "the texts have different lengths")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        plan = tmp / "bert-st.plan"
        log = build(args.builder, fixture, plan)
        got = check_mean(args.kiln, plan, texts, states, ids, log)
        if got is not None:
            check_files(args.kiln, plan, texts, got, tmp)
        check_cls_normalize(args.kiln, args.builder, fixture, texts, states, tmp)
        check_defaults_and_refusals(args.kiln, args.builder, fixture, texts, states, tmp)
        check_errors(args.kiln, plan)
        check_decoder_refused(args.kiln, args.builder, fixture.parent / "gpt2-optimum", tmp)
    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
