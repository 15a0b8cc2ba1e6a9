#!/usr/bin/env python3
"""kiln reshard: any N -> M without the ONNX (docs/tp-runtime.md#resharding).

    tp_reshard.py --builder KILN_WITH_COMPILER --check kiln_tp_shard_check
                  [--dtype bf16] FIXTURE_DIR

The fixture's ONNX is built once at tp_size 1. Then, from plans alone:
  - 1 -> 2 -> 4 -> 1: each split plan's shards reassemble to the first
    build's weights (kiln_tp_shard_check), and the final one-rank plan holds
    the first build's weights byte for byte;
  - 2 -> 4 with --split (one file per rank), then the four rank files -> 1:
    the same bytes again;
  - the resharded plans generate the first build's greedy tokens (--tp 2,
    and the --split rank files run by hand, one process per rank);
  - what reshard refuses, with a message and no output file: a missing rank
    file, rank files of two builds, a corrupt input, a plan without a stored
    source graph, bad arguments.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "e2e"))
from checks import Checks  # noqa: E402

PROMPT = ["--prompt-ids", "5,17,99,3,42,7", "--max-new-tokens", "16", "--temperature", "0",
          "--ignore-eos", "--no-stream", "--kv-cache-mb", "16", "--threads", "1"]


def run(cmd, env=None, timeout=900):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--builder", required=True, help="kiln with the compiler")
    ap.add_argument("--check", required=True, help="kiln_tp_shard_check")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("fixture")
    args = ap.parse_args()
    kiln, check = args.builder, Checks()
    fixture = Path(args.fixture)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        one = t / "one.plan"
        dtype = ["--dtype", args.dtype] if args.dtype else []
        r = run([kiln, "build", str(fixture / "model.onnx"), "-o", str(one), "-q", *dtype])
        if not check(r.returncode == 0, f"tp 1 build ({r.stderr.strip()[-400:]})"):
            return check.exit_code()

        def reshard(inputs, tp, out, *extra):
            r = run([kiln, "reshard", *map(str, inputs), "--tp", str(tp), "-o", str(out), *extra])
            check(r.returncode == 0, f"reshard {[Path(i).name for i in inputs]} -> {tp} "
                                     f"{' '.join(extra)} ({r.stderr.strip()[-600:]})")
            return r

        def same(first, other, what):
            s = run([args.check, str(first), str(other)])
            check(s.returncode == 0, f"{what}: {(s.stdout + s.stderr).strip()[-600:]}")

        two, four, back = t / "two.plan", t / "four.plan", t / "back.plan"
        r = reshard([one], 2, two)
        check("[5/7] partition" in r.stderr and "source graph of" in r.stderr,
              f"reshard prints its phases ({r.stderr.strip()[-300:]})")
        same(one, two, "1 -> 2: shards reassemble to the first build's weights")
        reshard([two], 4, four)
        same(one, four, "2 -> 4: shards reassemble to the first build's weights")
        reshard([four], 1, back)
        same(one, back, "4 -> 1: the first build's weights, byte for byte")

        # 2 -> 4 as rank files, then the rank files (in another order) -> 1.
        split = t / "split.plan"
        reshard([two], 4, split, "--split")
        ranks = [t / f"split.rank{r}.plan" for r in range(4)]
        check(all(p.exists() for p in ranks) and not split.exists(),
              f"--split writes split.rank0..3.plan ({sorted(p.name for p in t.iterdir())})")
        size_full, size_rank = four.stat().st_size, ranks[1].stat().st_size
        check(size_rank < size_full, f"a rank file ({size_rank} B) is smaller than the full "
                                     f"4-rank plan ({size_full} B)")
        joined = t / "joined.plan"
        reshard(list(reversed(ranks)), 1, joined)
        same(one, joined, "4 rank files -> 1: the first build's weights, byte for byte")

        # Inspect: the new build id, tp size, where it came from.
        i = run([kiln, "inspect", str(four), "--json"])
        if check(i.returncode == 0, f"inspect the resharded plan ({i.stderr.strip()[-200:]})"):
            info = json.loads(i.stdout)
            tpi = info.get("tensor_parallel", {})
            check(tpi.get("tp_size") == 4, "inspect: tp_size 4")
            prov = json.dumps(info.get("provenance", {}))
            check("resharded_from" in prov, "the provenance records what it was resharded from")

        # The resharded plans generate one rank's tokens.
        base_ids, two_ids = t / "base.json", t / "two.json"
        r0 = run([kiln, "run", str(one), *PROMPT, "--output-ids", str(base_ids)])
        r1 = run([kiln, "run", str(two), *PROMPT, "--tp", "2", "--output-ids", str(two_ids)])
        ok = r0.returncode == 0 and r1.returncode == 0
        check(ok and json.loads(base_ids.read_text()) == json.loads(two_ids.read_text()),
              f"the resharded 2-rank plan's greedy tokens equal one rank's "
              f"({r0.stderr.strip()[-200:]} {r1.stderr.strip()[-300:]})")
        r2 = run([kiln, "run", str(back), *PROMPT, "--output-ids", str(t / "back.json")])
        check(r2.returncode == 0 and json.loads((t / "back.json").read_text()) ==
              json.loads(base_ids.read_text()), "the 4 -> 1 plan's tokens equal the first build's")
        # Two rank files, each run by its own process (as on two hosts).
        pair = t / "pair.plan"
        reshard([one], 2, pair, "--split")
        rdv = t / "rdv"
        rdv.mkdir()
        procs = []
        for rank in range(2):
            env = dict(os.environ, KILN_RANK=str(rank))
            extra = ["--output-ids", str(t / "pair.json")] if rank == 0 else []
            procs.append(subprocess.Popen(
                [kiln, "run", str(t / f"pair.rank{rank}.plan"), *PROMPT, "--tp", "2",
                 "--rendezvous", str(rdv), *extra], env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True))
        errs = [p.communicate(timeout=600)[1] for p in procs]
        check(all(p.returncode == 0 for p in procs) and (t / "pair.json").exists() and
              json.loads((t / "pair.json").read_text()) == json.loads(base_ids.read_text()),
              f"two rank files, one process each, give one rank's tokens "
              f"({[p.returncode for p in procs]} {errs[0][-200:]} {errs[1][-200:]})")

        # Refusals: a message, exit 2, no output.
        def refused(cmd, needle, what, out):
            r = run([kiln, "reshard", *map(str, cmd), "-o", str(out)])
            check(r.returncode == 2 and needle in r.stderr and not Path(out).exists(),
                  f"{what}: exit {r.returncode}, {r.stderr.strip()[-300:]}")

        refused([ranks[0], ranks[2], ranks[3], "--tp", "2"], "rank(s) 1", "a missing rank file",
                t / "x1.plan")
        other = t / "other.plan"
        reshard([two], 4, other, "--split")
        refused([ranks[0], ranks[1], t / "other.rank2.plan", ranks[3], "--tp", "2"],
                "same build", "rank files of two builds", t / "x2.plan")
        corrupt = t / "corrupt.plan"
        data = bytearray(two.read_bytes())
        data[-100] ^= 0xFF  # a weight byte of the last rank's section
        corrupt.write_bytes(bytes(data))
        refused([corrupt, "--tp", "1"], "checksum", "a corrupt weight section", t / "x3.plan")
        refused([one], "missing --tp", "no --tp", t / "x4.plan")
        refused([one, "--tp", "0"], "--tp must be an integer", "--tp 0", t / "x5.plan")
        refused([one, "--tp", "1", "--split"], "with --tp 1 there is one plan", "--split with --tp 1",
                t / "x6.plan")
        r = run([kiln, "reshard", str(one), "--tp", "2", "-o", str(one)])
        check(r.returncode == 2 and "overwrite" in r.stderr, f"-o the input: {r.stderr[-200:]}")
        old = t / "old.plan"
        strip = run([sys.executable, "-c", STRIP, str(one), str(old)])
        if check(strip.returncode == 0, f"a plan without a source graph ({strip.stderr[-300:]})"):
            refused([old, "--tp", "2"], "no source graph", "a plan built before format 1.5",
                    t / "x7.plan")
    return check.exit_code()


# Rewrites a plan without Plan.source_graph, as kiln before format 1.5 wrote
# it: the field's vtable slot is zeroed and the checksums resealed.
STRIP = r"""
import sys
sys.path.insert(0, %r)
from plan_surgery import Plan
plan = Plan(open(sys.argv[1], 'rb').read())
plan.drop(plan.root(), "Plan", "source_graph")
open(sys.argv[2], 'wb').write(plan.reseal())
""" % str(Path(__file__).resolve().parent.parent / "hostile")


if __name__ == "__main__":
    sys.exit(main())
