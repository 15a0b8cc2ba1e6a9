#!/usr/bin/env python3
"""Plan provenance and `kiln verify`.

Re-saves a fixture's model with its weights in an external-data file, builds
a plan from it, and checks that:

1. `kiln inspect` shows the provenance: the SHA-256 and size of model.onnx
   and of its external-data file (equal to Python's hashlib), the kiln
   version and source commit, the build host and a UTC ISO 8601 time, and
   the build config;
2. `kiln verify` accepts the plan, and with `--onnx` accepts its model;
3. a byte flipped inside the weight section fails with exit 2, naming the
   section and the checksum;
4. another model given to `--onnx` fails with exit 3, naming the file;
5. a changed byte in the external data, or a missing external-data file,
   fails with exit 3, naming the external-data file;
6. `kiln verify --help` explains the exit codes, and bad arguments exit 2.
"""

import argparse
import hashlib
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx
from checks import Checks


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--kiln", required=True, help="kiln to inspect and verify with")
    ap.add_argument("fixture", help="a fixture folder with model.onnx")
    ap.add_argument("other", help="another model.onnx (not the plan's source)")
    args = ap.parse_args()
    check = Checks()

    def verify(plan, *extra):
        return subprocess.run([args.kiln, "verify", str(plan), *extra], capture_output=True,
                              text=True)

    with tempfile.TemporaryDirectory(prefix="kiln-verify-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        model = onnx.load(str(Path(args.fixture) / "model.onnx"))
        onnx.save_model(model, str(src / "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.data",
                        size_threshold=1024)
        plan = Path(tmp) / "m.plan"
        r = subprocess.run([args.builder, "build", str(src / "model.onnx"), "-o", str(plan),
                            "--quiet"], capture_output=True, text=True)
        check(r.returncode == 0, f"kiln build exits 0 (got {r.returncode}: {r.stderr.strip()})")
        if r.returncode != 0:
            return check.exit_code()

        r = subprocess.run([args.kiln, "inspect", str(plan), "--json"], capture_output=True,
                           text=True)
        p = json.loads(r.stdout)["provenance"]
        check(p["model"] == {"path": "model.onnx", "bytes": (src / "model.onnx").stat().st_size,
                             "sha256": sha256(src / "model.onnx")},
              "provenance: model.onnx's name, size and SHA-256")
        check(p["external_data"] == [{"path": "weights.data",
                                      "bytes": (src / "weights.data").stat().st_size,
                                      "sha256": sha256(src / "weights.data")}],
              "provenance: the external-data file's name, size and SHA-256")
        check(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", p["build_time"]) is not None,
              f"build time is UTC ISO 8601 ({p['build_time']})")
        check(p["build_host"] == socket.gethostname(), "build host is this machine")
        check(re.fullmatch(r"[0-9a-f]{40}(-dirty)?|unknown", p["source_commit"]) is not None,
              f"source commit is a git hash or 'unknown' ({p['source_commit']})")
        check(p["kiln_version"] != "", "kiln version recorded")
        check(p["build_inputs"]["config"]["ragged_batching"] in (True, False)
              and "tensor_parallel" in p["build_inputs"]["config"],
              "the full effective build config is recorded")
        text = subprocess.run([args.kiln, "inspect", str(plan)], capture_output=True,
                              text=True).stdout
        check(sha256(src / "weights.data") in text and "provenance" in text,
              "kiln inspect's text shows the provenance")

        r = verify(plan)
        check(r.returncode == 0 and "plan OK" in r.stdout, "verify: intact plan exits 0")
        r = verify(plan, "--onnx", str(src / "model.onnx"))
        check(r.returncode == 0 and "source OK" in r.stdout, "verify --onnx: its source exits 0")

        # A flipped byte in the middle of the weight section.
        sec = json.loads(subprocess.run([args.kiln, "inspect", str(plan), "--json"],
                                        capture_output=True, text=True).stdout)["sections"][0]
        bad = Path(tmp) / "bad.plan"
        data = bytearray(plan.read_bytes())
        data[sec["offset"] + sec["bytes"] // 2] ^= 0x10
        bad.write_bytes(bytes(data))
        r = verify(bad)
        check(r.returncode == 2 and "section 0 'shared'" in r.stderr
              and "checksum mismatch" in r.stderr,
              f"verify: flipped weight byte exits 2 naming the section ({r.stderr.strip()})")

        r = verify(plan, "--onnx", args.other)
        check(r.returncode == 3 and args.other in r.stderr and "not the plan's source" in r.stderr,
              f"verify --onnx: another model exits 3 naming it ({r.stderr.strip()})")

        changed = Path(tmp) / "changed"
        shutil.copytree(src, changed)
        data = bytearray((changed / "weights.data").read_bytes())
        data[len(data) // 3] ^= 0x01
        (changed / "weights.data").write_bytes(bytes(data))
        r = verify(plan, "--onnx", str(changed / "model.onnx"))
        check(r.returncode == 3 and "external data" in r.stderr and "weights.data" in r.stderr,
              f"verify --onnx: changed external data exits 3 naming it ({r.stderr.strip()})")
        (changed / "weights.data").unlink()
        r = verify(plan, "--onnx", str(changed / "model.onnx"))
        check(r.returncode == 3 and "weights.data" in r.stderr,
              f"verify --onnx: missing external data exits 3 naming it ({r.stderr.strip()})")

        r = verify("--help")
        check(r.returncode == 0 and "exit status" in r.stdout, "verify --help")
        r = subprocess.run([args.kiln, "verify"], capture_output=True, text=True)
        check(r.returncode == 2 and "expected one plan file" in r.stderr, "verify without a plan")
        r = verify(Path(tmp) / "none.plan")
        check(r.returncode == 2 and "none.plan" in r.stderr, "verify of a missing plan exits 2")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
