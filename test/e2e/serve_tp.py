#!/usr/bin/env python3
"""`kiln serve --tp 2` on the demo split by kiln-partition (docs/serve.md).

    serve_tp.py --kiln KILN --builder KILN_WITH_COMPILER DEMO_FIXTURE_DIR

Checks:
  - greedy completions from the 2-rank server equal `kiln run` on the
    one-rank plan, whole and streamed; /ready answers 200;
  - SIGTERM to the launcher during a stream: the stream finishes, rank 0
    drains, the followers are let go, and the launcher exits 0;
  - a follower killed with SIGKILL: the launcher exits non-zero within
    seconds, naming the rank, and no rank is left running.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures, raw, sse_request  # noqa: E402
from tp_run import children  # noqa: E402

PROMPTS = [[5, 17, 99, 3], [42, 7, 7, 7, 7, 1], [300, 301, 302]]


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--builder", required=True)
    ap.add_argument("demo")
    args = ap.parse_args()
    kiln = args.kiln
    with tempfile.TemporaryDirectory() as tmp:
        plans = {}
        for n in (1, 2):
            plans[n] = str(Path(tmp) / f"demo-tp{n}.plan")
            r = subprocess.run([args.builder, "build", str(Path(args.demo) / "model.onnx"), "-o",
                                plans[n], "--quiet", "--tp-size", str(n)],
                               capture_output=True, text=True)
            check(r.returncode == 0, f"build at tp_size {n}: {r.stderr[-300:]}")
        want = []
        for p in PROMPTS:
            r = subprocess.run([kiln, "run", plans[1], "--prompt-ids", ",".join(map(str, p)),
                                "--max-new-tokens", "12", "--temperature", "0", "--ignore-eos",
                                "--no-stream"], capture_output=True, text=True)
            # kiln run ends its text with a newline of its own.
            want.append(r.stdout[:-1] if r.returncode == 0 and r.stdout.endswith("\n") else None)

        s = Server(kiln, plans[2], "--tp", "2", "--allow-no-auth", "true", "--access-log", "false")
        try:
            check(raw(s, "/ready")[0] == 200, "/ready answers 200 at --tp 2")
            for p, w in zip(PROMPTS, want):
                st, _, body = raw(s, "/v1/completions", data=json.dumps(
                    {"prompt": p, "max_tokens": 12, "temperature": 0, "ignore_eos": True}))
                text = json.loads(body)["choices"][0]["text"] if st == 200 else None
                check(w is not None and text == w, f"prompt {p}: --tp 2 serves {text!r}, one rank "
                      f"runs {w!r}")
            st, events, _ = sse_request(s.port, None, {"prompt": PROMPTS[0], "max_tokens": 12,
                                                       "temperature": 0, "ignore_eos": True,
                                                       "stream": True})
            streamed = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1]
                               if json.loads(e).get("choices"))
            check(st == 200 and streamed == want[0], f"streamed at --tp 2: {streamed!r}")
            # SIGTERM during a stream: it finishes, then every rank exits.
            result = {}
            started = threading.Event()
            body = {"prompt": PROMPTS[1], "max_tokens": 200, "temperature": 0,
                    "ignore_eos": True, "stream": True}
            t = threading.Thread(target=lambda: result.update(
                r=sse_request(s.port, None, body, on_first=started.set)[:2]))
            t.start()
            started.wait(60)
            ranks = children(s.proc.pid)
            s.proc.send_signal(signal.SIGTERM)
            t.join(120)
            st, events = result.get("r", (0, []))
            check(st == 200 and events and events[-1] == "[DONE]",
                  f"a stream in flight at SIGTERM finishes: {st} {events[-2:] if events else ''}")
            code = s.proc.wait(60)
            check(code == 0, f"the launcher exits 0 after the drain: {code}")
            check(len(ranks) == 2 and not any(Path(f"/proc/{pid}").exists() for pid in ranks.values()),
                  f"both ranks exited: {ranks}")
        finally:
            if s.proc.poll() is None:
                s.proc.kill()

        s = Server(kiln, plans[2], "--tp", "2", "--allow-no-auth", "true", "--access-log", "false")
        try:
            ranks = children(s.proc.pid)
            check(1 in ranks, f"two ranks: {ranks}")
            if 1 in ranks:
                os.kill(ranks[1], signal.SIGKILL)
            t0 = time.time()
            try:
                code = s.proc.wait(30)
            except subprocess.TimeoutExpired:
                code = None
            took = time.time() - t0
            time.sleep(0.5)  # the log reader drains stderr to its end
            err = "".join(s.log)
            check(code not in (0, None) and took < 15 and "rank 1" in err,
                  f"a killed follower stops the server: exit {code} after {took:.1f} s, "
                  f"{err.strip()[-300:]}")
            check(0 not in ranks or not Path(f"/proc/{ranks[0]}").exists()
                  or "zombie" in Path(f"/proc/{ranks[0]}/status").read_text(),
                  "rank 0 exited with it")
        finally:
            if s.proc.poll() is None:
                s.proc.kill()
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
