#!/usr/bin/env python3
"""A sliding window shorter than the context goes into paged_attention.

    ragged_window.py --builder KILN FIXTURE_DIR

A model whose config.json sliding_window is shorter than its context gets
the ragged interface with the window on every layer (the fixture's export
has no per-layer list, and no mask that uses this window, so the config
decides), and the build says so; with use_sliding_window false, or a
window that covers the context, it is ragged with no window.
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def build(kiln, folder, config_changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(config_changes)
    (folder / "config.json").write_text(json.dumps(config))
    plan = folder / "model.plan"
    r = subprocess.run([kiln, "build", str(folder / "model.onnx"), "-o", str(plan)],
                       capture_output=True, text=True)
    shown = subprocess.run([kiln, "inspect", str(plan)], capture_output=True, text=True).stdout
    return r, shown


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True)
    ap.add_argument("fixture")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        shutil.copytree(args.fixture, folder)
        context = json.loads((folder / "config.json").read_text())["max_position_embeddings"]
        window = context // 2
        r, shown = build(args.builder, folder, {"sliding_window": window})
        layers = json.loads((folder / "config.json").read_text())["num_hidden_layers"]
        said = f"{layers} attention layers over a paged KV cache, {layers} of them with a " \
               f"sliding window of {window}"
        check(r.returncode == 0 and said in r.stderr, f"window < context: the build says '{said}'")
        check("interface   ragged" in shown, "window < context: the plan is ragged")
        r, shown = build(args.builder, folder, {"sliding_window": window,
                                                "use_sliding_window": False})
        check(r.returncode == 0 and "interface   ragged" in shown
              and "sliding window" not in r.stderr,
              "use_sliding_window false: the plan is ragged, no window")
        r, shown = build(args.builder, folder, {"sliding_window": context,
                                                "use_sliding_window": True})
        check(r.returncode == 0 and "interface   ragged" in shown
              and "sliding window" not in r.stderr,
              "window covering the context: the plan is ragged, no window")
    print(f"\nragged_window: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
