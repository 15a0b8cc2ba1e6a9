#!/usr/bin/env python3
"""A sliding-window model batches: requests longer than its window, together,
make the tokens each makes alone.

    window_batch.py --kiln KILN --builder KILN

Writes half_plans.py's Gemma-2-like decoder (older_mask_model.py: layer 0
attends through a window of 8, layer 1 to the whole context, every score
soft-capped) with its config.json, builds it, and checks (the model has no MLP, so no --require-injection: the ragged
interface needs every attention injected, soft-capped ones included):
  - the plan has the ragged interface and the build says one layer has the
    window;
  - `kiln run --prompts-file` over prompts of 9 to 30 tokens and 12 new
    tokens each (all longer than the window), in blocks of 4 so several are
    released behind the window mid-generation, gives every request the
    greedy tokens `kiln run --prompt-ids` gives it alone;
  - a config whose sliding_window covers the context gives no window.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx

from checks import Checks
from half_plans import SLIDING_CONFIG, SLIDING_MODEL
from older_mask_model import VOCAB, make_model

NEW_TOKENS = 12


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="the kiln that runs plans")
    ap.add_argument("--builder", help="the kiln that builds plans (default: --kiln)")
    args = ap.parse_args()
    builder = args.builder or args.kiln
    check = Checks()
    with tempfile.TemporaryDirectory(prefix="kiln-window-") as tmp:
        folder = Path(tmp) / "model"
        folder.mkdir()
        onnx.save(make_model(**SLIDING_MODEL), str(folder / "model.onnx"))
        (folder / "config.json").write_text(json.dumps(SLIDING_CONFIG))
        plan = Path(tmp) / "model.plan"
        r = subprocess.run([builder, "build", str(folder / "model.onnx"), "-o", str(plan)],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"kiln build (exit {r.returncode}) {r.stderr.strip()[-300:]}")
        check("2 attention layers over a paged KV cache, 1 of them with a sliding window of 8"
              in r.stderr + r.stdout, "the build reports one layer with the window")
        shown = subprocess.run([args.kiln, "inspect", str(plan)], capture_output=True,
                               text=True).stdout
        check("interface   ragged" in shown, "the plan is ragged")

        rng = np.random.default_rng(3)
        prompts = [rng.integers(4, VOCAB, n).tolist() for n in (9, 30, 17, 24, 12)]
        path = Path(tmp) / "requests.jsonl"
        path.write_text("".join(json.dumps({"prompt_ids": p, "max_new_tokens": NEW_TOKENS}) + "\n"
                                for p in prompts))
        engine = Path(tmp) / "engine.json"
        engine.write_text(json.dumps({"block_size": 4}))
        common = ["--temperature", "0", "--ignore-eos", "--engine-config", str(engine)]
        r = subprocess.run([args.kiln, "run", str(plan), "--prompts-file", str(path),
                            "--no-stream"] + common, capture_output=True, text=True)
        check(r.returncode == 0, f"batched run (exit {r.returncode}) {r.stderr.strip()[-300:]}")
        batched = {o["index"]: o["tokens"] for o in map(json.loads, r.stdout.splitlines())}
        for i, p in enumerate(prompts):
            ids = Path(tmp) / f"alone{i}.json"
            a = subprocess.run([args.kiln, "run", str(plan), "--prompt-ids", ",".join(map(str, p)),
                                "--max-new-tokens", str(NEW_TOKENS), "--no-stream",
                                "--output-ids", str(ids)] + common, capture_output=True, text=True)
            alone = json.loads(ids.read_text()) if a.returncode == 0 else None
            check(alone is not None and len(alone) == NEW_TOKENS and batched.get(i) == alone,
                  f"request {i} ({len(p)} prompt tokens): batched {batched.get(i)} == alone "
                  f"{alone} {a.stderr.strip()[-200:]}")

        covering = dict(SLIDING_CONFIG, sliding_window=64)
        (folder / "config.json").write_text(json.dumps(covering))
        r = subprocess.run([builder, "build", str(folder / "model.onnx"), "-o", str(plan)],
                           capture_output=True, text=True)
        check(r.returncode == 0 and "sliding window" not in r.stderr + r.stdout,
              "a window covering the context: no layer gets one")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
