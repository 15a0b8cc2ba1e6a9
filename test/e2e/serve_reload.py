#!/usr/bin/env python3
"""`kiln serve` switching plans, and rolling back (docs/serve.md#switching-plans).

    serve_reload.py --kiln KILN PLAN_A PLAN_B PLAN_C

Three decoder plans of different models. Checks:
  - POST /admin/reload needs an admin key: a plain key gets 403;
  - switching to B while a stream runs on A: the stream finishes on A, then
    /v1/models names B and a greedy completion equals `kiln run` on B;
  - a file that is not a plan (and a missing one): 422, and B keeps serving;
  - {"rollback": true} goes back to A;
  - SIGHUP with --config naming C switches to C; SIGHUP with a config naming
    a broken plan leaves C serving;
  - kiln_reloads_total counts the switches by result; SIGTERM exits 0.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from serve import Server, check, failures, metric, raw, sse_request, wait_until  # noqa: E402

PROMPT = [5, 17, 99, 3]


def name_of(plan):
    return Path(plan).name[:-len(".plan")]


def greedy(server, key):
    st, _, body = raw(server, "/v1/completions", key, data=json.dumps(
        {"prompt": PROMPT, "max_tokens": 8, "temperature": 0, "ignore_eos": True}))
    return json.loads(body)["choices"][0]["text"] if st == 200 else f"HTTP {st}: {body[:200]}"


def served(server, key):
    st, _, body = raw(server, "/v1/models", key)
    return json.loads(body)["data"][0]["id"] if st == 200 else None


def wait_served(server, key, want, seconds=60):
    return wait_until(lambda: served(server, key), lambda got: got == want, seconds) == want


def main():
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("plans", nargs=3)
    args = ap.parse_args()
    kiln = args.kiln
    a, b, c = (str(Path(p).resolve()) for p in args.plans)
    with tempfile.TemporaryDirectory() as tmp:
        def key(name, admin):
            out = subprocess.run([kiln, "keys", "new", name], capture_output=True, text=True)
            k, line = out.stdout.splitlines()
            entry = json.loads(line)
            if admin:
                entry["admin"] = True
            return k, json.dumps(entry)
        admin, admin_line = key("ops", True)
        user, user_line = key("app", False)
        keys = Path(tmp) / "keys.jsonl"
        keys.write_text(admin_line + "\n" + user_line + "\n")
        config = Path(tmp) / "serve.json"
        config.write_text(json.dumps({"max_queue": 16}))
        broken = Path(tmp) / "broken.plan"
        broken.write_bytes(Path(a).read_bytes()[:4096])  # a truncated plan
        want_b = subprocess.run([kiln, "run", b, "--prompt-ids", ",".join(map(str, PROMPT)),
                                 "--max-new-tokens", "8", "--temperature", "0", "--ignore-eos",
                                 "--no-stream"], capture_output=True, text=True).stdout[:-1]

        s = Server(kiln, a, "--api-keys", str(keys), "--config", str(config),
                   "--access-log", "false")
        try:
            check(served(s, user) == name_of(a), f"serves {name_of(a)} first")
            st, _, body = raw(s, "/admin/reload", user, data=json.dumps({"plan": b}))
            check(st == 403 and "admin" in body, f"a plain key may not switch: {st} {body[:150]}")

            # A stream on A in flight while B takes over.
            result, started = {}, threading.Event()
            stream = {"prompt": PROMPT, "max_tokens": 120, "temperature": 0, "ignore_eos": True,
                      "stream": True}
            t = threading.Thread(target=lambda: result.update(
                r=sse_request(s.port, user, stream, on_first=started.set)[:2]))
            t.start()
            started.wait(60)
            st, _, body = raw(s, "/admin/reload", admin, data=json.dumps({"plan": b}))
            check(st == 200 and json.loads(body)["model"] == name_of(b),
                  f"switch to {name_of(b)}: {st} {body[:200]}")
            t.join(120)
            st_stream, events = result.get("r", (0, []))
            chunks = [json.loads(e) for e in events if e != "[DONE]"]
            check(st_stream == 200 and events and events[-1] == "[DONE]"
                  and all(ch["model"] == name_of(a) for ch in chunks),
                  f"the stream begun on {name_of(a)} finishes on it ({len(events)} events)")
            check(served(s, user) == name_of(b), f"/v1/models names {name_of(b)}")
            got = greedy(s, user)
            check(want_b and got == want_b, f"greedy on {name_of(b)} equals kiln run: {got!r} vs "
                  f"{want_b!r}")

            for bad in (str(broken), str(Path(tmp) / "missing.plan")):
                st, _, body = raw(s, "/admin/reload", admin, data=json.dumps({"plan": bad}))
                check(st == 422 and "stays" in body, f"{Path(bad).name}: {st} {body[:200]}")
            check(served(s, user) == name_of(b) and greedy(s, user) == want_b,
                  f"{name_of(b)} still serves after the failed switches")
            st, _, body = raw(s, "/admin/reload", admin, data=json.dumps({"plna": b}))
            check(st == 400 and "plna" in body, f"unknown field: {st} {body[:150]}")

            st, _, body = raw(s, "/admin/reload", admin, data=json.dumps({"rollback": True}))
            check(st == 200 and json.loads(body)["model"] == name_of(a),
                  f"rollback to {name_of(a)}: {st} {body[:200]}")

            config.write_text(json.dumps({"max_queue": 16, "plan": c}))
            s.proc.send_signal(signal.SIGHUP)
            check(wait_served(s, user, name_of(c)), f"SIGHUP switches to {name_of(c)}")
            config.write_text(json.dumps({"max_queue": 16, "plan": str(broken)}))
            before = metric(s, admin, 'kiln_reloads_total{result="failed"}')
            s.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: metric(s, admin, 'kiln_reloads_total{result="failed"}'),
                       lambda n: n > before)
            check(served(s, user) == name_of(c) and greedy(s, user).startswith("HTTP") is False,
                  f"a SIGHUP to a broken plan leaves {name_of(c)} serving")
            ok = metric(s, admin, 'kiln_reloads_total{result="ok"}')
            failed = metric(s, admin, 'kiln_reloads_total{result="failed"}')
            check(ok == 3 and failed == 3, f"kiln_reloads_total: ok {ok:.0f} (3), failed "
                  f"{failed:.0f} (3)")
        finally:
            check(s.stop() == 0, "SIGTERM: exit 0")
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
