#!/usr/bin/env python3
"""A plan over 2 GB: built from ONNX external data, verified, loaded and run.

Generates (in a temporary folder, deleted at the end) an ONNX model
`out = Gather(table, ids) + bias` whose external-data file holds a float32
table of 2 GiB + 1 MiB and, after it, the bias. The file is sparse: only the
table rows the test reads and the bias are written, so it costs little disk
and no time to make. Then:

1. `kiln build` writes a plan over 2 GB, with the bias at a weight offset
   beyond 2 GiB, and its peak resident memory stays well under the weights'
   size (the writer streams weights from the mapped file and releases them);
2. `kiln verify --onnx` rechecks every section checksum and the SHA-256 of
   the model and its external data;
3. `kiln exec` runs the plan on rows at the start and end of the table, and
   the outputs equal numpy's.

Disk: about 2.2 GB for the plan while the test runs.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from checks import Checks

DIM = 1024
ROWS = (2**31 + 2**20) // (DIM * 4)  # table bytes: 2 GiB + 1 MiB
READ_ROWS = [0, 3, ROWS - 2, ROWS - 1]


def row_values(r):
    return (np.arange(DIM, dtype=np.float32) * 0.25 + (r % 1000) + 1).astype(np.float32)


def external(name, dims, offset, location):
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    length = int(np.prod(dims)) * 4
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def make_model(folder: Path):
    """Writes model.onnx and a sparse weights.bin; returns the bias."""
    table_bytes = ROWS * DIM * 4
    bias_offset = (table_bytes + 4095) // 4096 * 4096
    bias = np.linspace(-1, 1, DIM, dtype=np.float32)
    with open(folder / "weights.bin", "wb") as f:
        f.truncate(bias_offset + DIM * 4)
        for r in READ_ROWS:
            f.seek(r * DIM * 4)
            f.write(row_values(r).tobytes())
        f.seek(bias_offset)
        f.write(bias.tobytes())
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"], name="gather", axis=0),
         helper.make_node("Add", ["rows", "bias"], ["out"], name="add_bias")],
        "big_table",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["n", DIM])],
        initializer=[external("table", [ROWS, DIM], 0, "weights.bin"),
                     external("bias", [DIM], bias_offset, "weights.bin")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(folder / "model.onnx"))
    return bias


def run(cmd, what, failures):
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    print(f"{time.time() - start:6.1f} s  {what}: exit {r.returncode}")
    if r.returncode != 0:
        failures.append(f"{what} exited {r.returncode}: {r.stderr.strip()}")
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--kiln", required=True, help="kiln to verify and run the plan with")
    args = ap.parse_args()
    check = Checks()
    failures = check.failures

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="kiln-2gb-") as tmp:
        folder = Path(tmp)
        bias = make_model(folder)
        plan = folder / "big.plan"
        weight_bytes = ROWS * DIM * 4 + DIM * 4

        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        run([args.builder, "build", str(folder / "model.onnx"), "-o", str(plan), "--quiet"],
            "kiln build", failures)
        if failures:
            return check.exit_code()
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        size = plan.stat().st_size
        check(size > 2**31, f"the plan is over 2 GiB ({size} bytes)")
        # Without streaming the build held every weight in memory (> 2 GiB).
        check(before * 1024 < weight_bytes // 2 and peak < weight_bytes // 2,
              f"kiln build's peak RSS {peak / 2**20:.0f} MiB is under half the "
              f"{weight_bytes / 2**20:.0f} MiB of weights")

        r = run([args.kiln, "verify", str(plan), "--onnx", str(folder / "model.onnx")],
                "kiln verify --onnx", failures)
        check("plan OK" in r.stdout and "source OK" in r.stdout, "verify reports plan and source OK")

        r = run([args.kiln, "inspect", str(plan), "--json"], "kiln inspect", failures)
        if r.returncode == 0:
            info = json.loads(r.stdout)
            sec = info["sections"][0]
            check(sec["offset"] + sec["bytes"] == size and sec["bytes"] >= weight_bytes,
                  "one section holds all weights up to the end of the file")
            ext = info["provenance"]["external_data"]
            check(len(ext) == 1 and ext[0]["path"] == "weights.bin"
                  and ext[0]["bytes"] == (folder / "weights.bin").stat().st_size,
                  "provenance records weights.bin and its size")

        ids = np.array(READ_ROWS, dtype=np.int64)
        (folder / "ids.pb").write_bytes(numpy_helper.from_array(ids, "ids").SerializeToString())
        out_dir = folder / "out"
        run([args.kiln, "exec", str(plan), "--input", f"ids={folder / 'ids.pb'}",
             "--output-dir", str(out_dir)], "kiln exec", failures)
        out_file = out_dir / "out.pb"
        if out_file.exists():
            t = TensorProto()
            t.ParseFromString(out_file.read_bytes())
            got = numpy_helper.to_array(t)
            want = np.stack([row_values(r) for r in READ_ROWS]) + bias
            check(got.shape == want.shape and np.array_equal(got, want),
                  "rows from both ends of the table plus the bias (stored beyond 2 GiB) "
                  "match numpy")
        else:
            check(False, "kiln exec wrote out.pb")
    print(f"total {time.time() - started:.1f} s")
    return check.exit_code()


if __name__ == "__main__":
    sys.exit(main())
