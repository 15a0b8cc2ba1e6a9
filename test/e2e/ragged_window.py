#!/usr/bin/env python3
"""A sliding window shorter than the context keeps the dense interface.

    ragged_window.py --builder KILN FIXTURE_DIR

paged_attention has no window, so kiln build must not give the ragged
interface to a model whose window is shorter than its context (config.json
sliding_window), must say why, and must still batch when the window covers
the context or use_sliding_window is false.
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
    r = subprocess.run([kiln, "build", str(folder / "model.onnx"), "-o", str(plan), "--quiet"],
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
        r, shown = build(args.builder, folder, {"sliding_window": context // 2})
        check(r.returncode == 0 and f"sliding-window attention (window {context // 2}" in r.stderr,
              f"window < context: warned {r.stderr.strip()[-160:]}")
        check("interface   dense" in shown, "window < context: the plan is dense")
        r, shown = build(args.builder, folder, {"sliding_window": context // 2,
                                                "use_sliding_window": False})
        check(r.returncode == 0 and "interface   ragged" in shown,
              "use_sliding_window false: the plan is ragged")
        r, shown = build(args.builder, folder, {"sliding_window": context,
                                                "use_sliding_window": True})
        check(r.returncode == 0 and "interface   ragged" in shown,
              "window covering the context: the plan is ragged")
    print(f"\nragged_window: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
