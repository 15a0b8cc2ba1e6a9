#!/usr/bin/env python3
"""Choosing a backend: `kiln build --target` and `--backend` of the runtime commands.

Builds a decoder fixture and checks that:

1. `--target cpu` (and the default) builds a plan that `kiln run --backend cpu`
   runs, and the plan's build config records the target;
2. `--target nosuch` exits 2 naming the backend and listing the known ones,
   and leaves the file already at -o untouched, with no temporary left over;
3. `kiln run`, `bench offline`, `exec` and `embed` with `--backend nosuch`
   (or `--device nosuch`, the same option) exit 2 listing the backends this
   kiln was built with;
4. `--device cpu` runs, and `kiln inspect` says the plan runs on cpu.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from checks import Checks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--kiln", required=True, help="kiln to run with")
    ap.add_argument("fixture", help="a decoder fixture folder with model.onnx")
    args = ap.parse_args()
    check = Checks()

    def kiln(tool, *argv):
        return subprocess.run([tool, *map(str, argv)], capture_output=True, text=True)

    model = Path(args.fixture) / "model.onnx"
    with tempfile.TemporaryDirectory(prefix="kiln-backend-") as tmp:
        plan = Path(tmp) / "m.plan"
        r = kiln(args.builder, "build", model, "-o", plan, "-q", "--target", "cpu")
        check(r.returncode == 0, f"build --target cpu exits 0 (got {r.returncode}: {r.stderr})")
        if r.returncode != 0:
            return check.exit_code()
        r = kiln(args.kiln, "inspect", plan, "--json")
        config = json.loads(json.loads(r.stdout)["build_config"]) if r.returncode == 0 else {}
        check(config.get("target") == "cpu", f"the plan records target cpu: {config}")
        r = kiln(args.kiln, "run", plan, "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                 "--temperature", "0", "--backend", "cpu")
        check(r.returncode == 0, f"run --backend cpu exits 0 (got {r.returncode}: {r.stderr})")
        r = kiln(args.kiln, "run", plan, "--prompt-ids", "1,2,3", "--max-new-tokens", "2",
                 "--temperature", "0", "--device", "cpu")
        check(r.returncode == 0, f"run --device cpu exits 0 (got {r.returncode}: {r.stderr})")
        r = kiln(args.kiln, "inspect", plan)
        check(r.returncode == 0 and "backends    runs on cpu" in r.stdout,
              f"inspect says the plan runs on cpu: {r.stdout[-300:]!r}")

        kept = Path(tmp) / "kept.plan"
        kept.write_bytes(b"previous plan")
        r = kiln(args.builder, "build", model, "-o", kept, "-q", "--target", "nosuch")
        check(r.returncode == 2, f"build --target nosuch exits 2 (got {r.returncode})")
        check("unknown target backend 'nosuch' (this kiln knows: cpu" in r.stderr,
              f"build --target nosuch names it and lists the backends: {r.stderr!r}")
        check(kept.read_bytes() == b"previous plan", "the file at -o is untouched")
        check(not Path(str(kept) + ".tmp").exists(), "no temporary plan is left")

        for argv in (["run", plan, "--prompt-ids", "1", "--backend", "nosuch"],
                     ["bench", "offline", plan, "--num-prompts", "1", "--backend", "nosuch"],
                     ["exec", plan, "--backend", "nosuch"],
                     ["embed", plan, "--text", "a", "--backend", "nosuch"],
                     ["exec", plan, "--device", "nosuch"]):
            r = kiln(args.kiln, *argv)
            check(r.returncode == 2, f"{argv[:2]} ... nosuch exits 2 (got {r.returncode})")
            check("unknown backend 'nosuch'; this kiln was built with: cpu" in r.stderr,
                  f"{argv[0]} --backend nosuch lists the built backends: {r.stderr!r}")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
