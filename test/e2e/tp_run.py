#!/usr/bin/env python3
"""`kiln run --tp N` against one rank (docs/tp-runtime.md).

    tp_run.py --kiln KILN --replicate KILN_TP_REPLICATE PLAN
    tp_run.py --kiln KILN --toy KILN_TP_TOY

With --replicate, kiln_tp_replicate wraps PLAN (built without tensor
parallelism) into a plan of N ranks that each run the whole graph. With
--toy, kiln_tp_toy writes a toy decoder unpartitioned and split over N ranks
(its LM head by columns, all_gather, then an all_reduce of 1/N shares), and
its logits must match within 1e-4 relative. Checks:
  - --tp 2 and --tp 4 (and --tp 3, uneven, for the toy) give the same 32
    greedy tokens as one rank, and the same for a batch of prompts (batched
    across ranks equals alone), for seeded sampling, and (with --replicate)
    for a batch whose KV cache is too small (it preempts on both);
  - a TP plan without --tp, or with another N, and a one-rank plan with
    --tp 2, fail with exit 2 and a message naming the --tp to use;
  - a rank file (one rank's program) joins the run of the full plan's other
    rank, by hand through KILN_RANK and a rendezvous dir, as on two hosts;
    two ranks also meet by hand through a TCP rendezvous (tcp://HOST:PORT);
  - a rank killed with SIGKILL mid-run makes the launcher exit non-zero
    within seconds, naming the rank.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def ids_of(kiln, plan, extra, tmp, name, logits=None):
    out = Path(tmp) / (name + ".json")
    dump = ["--dump-logits", logits] if logits else []
    r = run([kiln, "run", plan, "--prompt-ids", "5,17,99,3", "--max-new-tokens", "32",
             "--temperature", "0", "--ignore-eos", "--no-stream", "--kv-cache-mb", "16",
             "--output-ids", str(out)] + dump + extra)
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return None, r
    return json.loads(out.read_text()), r


def read_npy(path):
    import numpy as np
    return np.load(path)


def children(pid):
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return {}
    ranks = {}
    for k in kids:
        try:
            env = Path(f"/proc/{k}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for e in env:
            if e.startswith(b"KILN_RANK="):
                ranks[int(e.split(b"=")[1])] = int(k)
    return ranks


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--replicate")
    ap.add_argument("--toy")
    ap.add_argument("plan", nargs="?")
    args = ap.parse_args()
    kiln = args.kiln
    with tempfile.TemporaryDirectory() as tmp:
        def make(n, out, rank_file=None):
            extra = ["--rank-file", str(rank_file)] if rank_file is not None else []
            if args.toy:
                cmd = [args.toy, str(n), "1000", out] + extra
            else:
                cmd = [args.replicate, args.plan, str(n), out] + extra
            r = run(cmd)
            check(r.returncode == 0, f"plan for {n} ranks {extra}: {r.stderr[-300:]}")
            return out
        plan = make(1, str(Path(tmp) / "tp1.plan")) if args.toy else args.plan
        base_logits = str(Path(tmp) / "tp1.npy")
        base, r = ids_of(kiln, plan, [], tmp, "tp1", base_logits)
        check(base is not None and len(base) == 32 and len(set(base)) > 8,
              f"one-rank run: {base}")
        counts = (2, 3, 4) if args.toy else (2, 4)
        plans = {n: make(n, str(Path(tmp) / f"tp{n}.plan")) for n in counts}
        for n in counts:
            logits = str(Path(tmp) / f"tp{n}.npy")
            got, r = ids_of(kiln, plans[n], ["--tp", str(n)], tmp, f"tp{n}", logits)
            check(got == base, f"--tp {n} gives the one-rank tokens: {got}")
            if got is not None:
                a, b = read_npy(base_logits), read_npy(logits)
                import numpy as np
                rel = float(np.max(np.abs(a - b) / (np.abs(a) + 1e-6))) if a.shape == b.shape else 1e9
                check(rel <= 1e-4, f"--tp {n} logits {b.shape} within 1e-4 relative: {rel:.2e}")

        # Batched across ranks equals the one-rank batch.
        reqs = Path(tmp) / "reqs.jsonl"
        reqs.write_text("".join(json.dumps({"prompt_ids": p, "max_new_tokens": 12}) + "\n"
                                for p in ([5, 17, 99], [7] * 20, [300, 301, 302], [42])))
        batch = [kiln, "run", "--prompts-file", str(reqs), "--temperature", "0", "--ignore-eos",
                 "--no-stream", "--kv-cache-mb", "16"]
        one = run(batch[:2] + [plan] + batch[2:])
        two = run(batch[:2] + [plans[2]] + batch[2:] + ["--tp", "2"])
        def tokens(r):
            return [json.loads(x)["tokens"] for x in r.stdout.splitlines() if x.strip()]
        check(one.returncode == 0 and two.returncode == 0 and tokens(one) == tokens(two)
              and len(tokens(one)) == 4, f"a batch at --tp 2 equals one rank {two.stderr[-300:]}")

        # Preemption (a KV cache too small for the batch) and seeded sampling
        # at --tp 2 give the one-rank tokens.
        long_reqs = Path(tmp) / "long.jsonl"
        long_reqs.write_text("".join(json.dumps({"prompt_ids": [5, 17, i + 1] * 4,
                                                 "max_new_tokens": 60}) + "\n" for i in range(6)))
        # (The toy's KV takes 32 bytes a token: 1 MiB, the least --kv-cache-mb
        # takes, holds all; tp_fixtures.py --batch-checks preempts real splits.)
        cases = [("seeded sampling", ["--temperature", "0.9", "--top-p", "0.95", "--top-k",
                                      "50", "--seed", "7", "--kv-cache-mb", "16"])]
        if not args.toy:
            cases.append(("preemption", ["--temperature", "0", "--kv-cache-mb", "1"]))
        for what, flags in cases:
            cmd = [kiln, "run", "--prompts-file", str(long_reqs), "--ignore-eos",
                   "--no-stream"] + flags
            one = run(cmd[:2] + [plan] + cmd[2:])
            two = run(cmd[:2] + [plans[2]] + cmd[2:] + ["--tp", "2"])
            pre = [re.search(r"(\d+) preemptions", r.stderr) for r in (one, two)]
            counted = [int(m[1]) if m else -1 for m in pre]
            ok = (one.returncode == 0 and two.returncode == 0 and len(tokens(one)) == 6
                  and tokens(one) == tokens(two))
            if what == "preemption":
                ok = ok and counted[0] > 0 and counted[1] > 0
            check(ok, f"{what} at --tp 2 equals one rank: preemptions {counted} "
                      f"{two.stderr.strip()[-300:]}")

        # Refusals.
        r = run([kiln, "run", plans[2], "--prompt-ids", "1,2"])
        check(r.returncode == 2 and "--tp 2" in r.stderr, f"no --tp: {r.stderr.strip()[-200:]}")
        r = run([kiln, "run", plans[2], "--prompt-ids", "1,2", "--tp", "4"])
        check(r.returncode == 2 and "--tp 2" in r.stderr, f"--tp 4 on a 2-rank plan: {r.stderr.strip()[-200:]}")
        r = run([kiln, "run", plan, "--prompt-ids", "1,2", "--tp", "2"])
        check(r.returncode == 2 and "without tensor parallelism" in r.stderr,
              f"--tp 2 on a one-rank plan: {r.stderr.strip()[-200:]}")

        # A rank file runs rank 1 beside the full plan's rank 0, joined by hand.
        rank_file = make(2, str(Path(tmp) / "rank1.plan"), rank_file=1)
        rdv = Path(tmp) / "rdv"
        rdv.mkdir()
        out = Path(tmp) / "joined.json"
        common = ["--prompt-ids", "5,17,99,3", "--max-new-tokens", "32", "--temperature", "0",
                  "--ignore-eos", "--no-stream", "--kv-cache-mb", "16", "--tp", "2",
                  "--rendezvous", str(rdv)]
        env0 = dict(os.environ, KILN_RANK="0")
        env1 = dict(os.environ, KILN_RANK="1")
        p0 = subprocess.Popen([kiln, "run", plans[2], "--output-ids", str(out)] + common, env=env0,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p1 = subprocess.Popen([kiln, "run", rank_file] + common, env=env1,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        e0 = p0.communicate(timeout=300)[1]
        e1 = p1.communicate(timeout=300)[1]
        check(p0.returncode == 0 and p1.returncode == 0 and out.exists()
              and json.loads(out.read_text()) == base,
              f"rank file joins by hand: exits {p0.returncode} {p1.returncode} {e0[-300:]} {e1[-300:]}")

        # The same two ranks by hand through a TCP rendezvous (rank 0 serves
        # the store on its address), as on two hosts without a shared dir.
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        tcp = common[:-1] + [f"tcp://127.0.0.1:{port}"]
        out_tcp = Path(tmp) / "tcp.json"
        p1 = subprocess.Popen([kiln, "run", plans[2]] + tcp, env=env1,  # rank 1 first: it waits
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p0 = subprocess.Popen([kiln, "run", plans[2], "--output-ids", str(out_tcp)] + tcp,
                              env=env0, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        e0 = p0.communicate(timeout=300)[1]
        e1 = p1.communicate(timeout=300)[1]
        check(p0.returncode == 0 and p1.returncode == 0 and out_tcp.exists()
              and json.loads(out_tcp.read_text()) == base,
              f"ranks meet through tcp://127.0.0.1:{port}: exits {p0.returncode} {p1.returncode} "
              f"{e0[-300:]} {e1[-300:]}")
        r = run([kiln, "run", plans[2], "--prompt-ids", "1", "--tp", "2", "--rendezvous",
                 "tcp://nohost"], env=env0)
        check(r.returncode == 2 and "tcp://HOST:PORT" in r.stderr,
              f"a bad rendezvous address: {r.stderr.strip()[-200:]}")

        # A rank file runs only its own rank.
        r = run([kiln, "run", rank_file] + common[:-2] + ["--rendezvous", str(Path(tmp) / "x")],
                env=dict(os.environ, KILN_RANK="0"), timeout=120)
        check(r.returncode == 2 and "not rank 0" in r.stderr,
              f"rank file for rank 1 as rank 0: {r.stderr.strip()[-200:]}")
        if args.toy:
            # Files of two builds never run together: both ranks say so.
            other = str(Path(tmp) / "other.plan")
            r = subprocess.run([args.toy, "2", "1000", other, "--rank-file", "1"],
                               env=dict(os.environ, KILN_TP_TOY_BUILD_ID="another-build"))
            rdv2 = Path(tmp) / "rdv2"
            rdv2.mkdir()
            mixed = common[:-2] + ["--rendezvous", str(rdv2)]
            q0 = subprocess.Popen([kiln, "run", plans[2]] + mixed, env=env0,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            q1 = subprocess.Popen([kiln, "run", other] + mixed, env=env1,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            f0, f1 = q0.communicate(timeout=120)[1], q1.communicate(timeout=120)[1]
            check(q0.returncode == 2 and q1.returncode == 2 and "another build" in f0,
                  f"mixed builds refused: {q0.returncode} {q1.returncode} {f0.strip()[-200:]}")

        # A rank killed mid-run: the launcher stops the others, names it.
        # Work for minutes on any machine (one long generation can end early,
        # at the plan's context length), so the kill lands mid-run.
        many = Path(tmp) / "many.jsonl"
        many.write_text("".join(json.dumps({"prompt_ids": [5, 17, i % 50 + 1],
                                            "max_new_tokens": 100000}) + "\n"
                                for i in range(4000)))
        p = subprocess.Popen([kiln, "run", plans[2], "--prompts-file", str(many),
                              "--temperature", "0", "--ignore-eos", "--tp", "2",
                              "--kv-cache-mb", "64", "--no-stream"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        ranks = {}
        deadline = time.time() + 60
        while time.time() < deadline and len(ranks) < 2 and p.poll() is None:
            ranks = children(p.pid)
            time.sleep(0.2)
        time.sleep(1)  # both ranks have joined and are working by now
        check(1 in ranks and p.poll() is None, f"two ranks running: {ranks}")
        if 1 in ranks:
            try:
                os.kill(ranks[1], signal.SIGKILL)
            except ProcessLookupError:
                pass  # already gone: the check above failed, the ones below say how
        killed = time.time()
        try:
            err = p.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            err = "hung"
        took = time.time() - killed
        check(p.returncode not in (0, None) and took < 15 and "rank 1" in err and "signal 9" in err,
              f"killed rank 1: exit {p.returncode} after {took:.1f} s: {err.strip()[-300:]}")
        # Its peer (rank 0) is gone too.
        check(0 not in ranks or not Path(f"/proc/{ranks[0]}").exists()
              or "zombie" in Path(f"/proc/{ranks[0]}/status").read_text(),
              "rank 0 exited with it")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
